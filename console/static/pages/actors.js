// The live actor tree of this node (/v1/actors), beside its event journal
// (/v1/events). Both are polled: the tree every 1.5 s, updated in place
// so that collapsed subtrees stay collapsed; the journal from the last
// sequence number it saw. An actor whose restart count went up is
// highlighted for a while; its last failure comes from the journal. With
// chaos on for a super user each actor has fault buttons.
import {api, confirmThen, h, poll, settings} from "../lib.js";

const RECENT_MS = 15000; // how long a restart stays highlighted
const MAX_EVENTS = 1000; // journal lines kept on the page

// collapsed names the subtrees the user folded; it outlives the page (a
// return to #/actors finds them folded still).
const collapsed = new Set(JSON.parse(sessionStorage.getItem("skein.collapsed") || "[]"));

export async function render(root) {
  const s = await settings();
  const err = h("div");
  const result = h("div");
  const treeRoot = h("ul");
  const filter = h("input", {type: "search", placeholder: "filter: actor, type, cause", size: 30, id: "journal-filter"});
  const events = h("div.events", {id: "journal"});
  root.append(h("h1", "Actors"), err, result,
    h("div.tree-help.muted", "▾ folds a subtree; an actor restarted in the last 15 s is highlighted" +
      (s.can_inject ? "; fault buttons show on the row under the mouse" : "")),
    h("div.cols",
      h("div.tree", {id: "tree"}, treeRoot),
      h("div.journal", h("h2", "Event journal ", filter), events)));

  const state = {
    items: new Map(),      // actor name → its li and fields
    restarts: new Map(),   // actor name → restarts last seen
    restartedAt: new Map(),// actor name → when its restart count last went up
    failures: new Map(),   // actor name → its last failed event
    canInject: s.can_inject,
    result,
  };

  // The journal: the whole of it first, then what is new.
  let since = 0;
  let lines = [];
  const show = () => {
    const f = filter.value.trim().toLowerCase();
    const shown = f ? lines.filter(l => l.dataset.text.includes(f)) : lines;
    events.replaceChildren(...shown.slice(-300).reverse());
  };
  filter.addEventListener("input", show);
  poll(async () => {
    const j = await api(`/v1/events?since=${since}`);
    if (j.next < since) lines = []; // the node restarted: a new journal
    since = j.next;
    if (!j.events.length) return;
    for (const e of j.events) {
      if (e.type === "failed") state.failures.set(e.actor, e);
      lines.push(eventLine(e));
    }
    lines = lines.slice(-MAX_EVENTS);
    show();
  }, 1000, err);

  poll(async () => {
    const t = await api("/v1/actors");
    update(state, treeRoot, t.actors);
  }, 1500, err);
}

function eventLine(e) {
  const parts = [e.time.slice(11, 23), e.type.padEnd(9), e.actor];
  if (e.role) parts.push("role " + e.role);
  if (e.epoch) parts.push("epoch " + e.epoch);
  if (e.directive) parts.push("→ " + e.directive);
  if (e.delay_seconds) parts.push(`after ${e.delay_seconds.toFixed(3)} s`);
  if (e.recovery_seconds) parts.push(`recovered in ${e.recovery_seconds.toFixed(3)} s`);
  if (e.cause) parts.push(e.cause);
  const text = parts.join("  ");
  const line = h("div", {class: e.type, title: text, "data-type": e.type, "data-actor": e.actor}, text);
  line.dataset.text = text.toLowerCase();
  return line;
}

// update reconciles the list ul with the actors infos, in order, reusing
// each actor's element so that its collapse state and highlight stay.
function update(state, ul, infos) {
  const seen = new Set();
  const now = Date.now();
  const walk = (ul, infos, depth) => {
    const want = [];
    for (const a of infos) {
      seen.add(a.name);
      let it = state.items.get(a.name);
      if (!it) {
        it = item(state, a.name);
        state.items.set(a.name, it);
      }
      const prev = state.restarts.get(a.name);
      if (prev !== undefined && a.restarts > prev) state.restartedAt.set(a.name, now);
      state.restarts.set(a.name, a.restarts);
      it.row.style.setProperty("--depth", depth);
      fill(state, it, a, now);
      walk(it.children, a.children || [], depth + 1);
      want.push(it.li);
    }
    // Put the children in order, adding the new and dropping the gone.
    want.forEach((li, i) => {
      if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null);
    });
    while (ul.children.length > want.length) ul.lastChild.remove();
  };
  walk(ul, infos, 0);
  for (const name of state.items.keys()) {
    if (!seen.has(name)) state.items.delete(name);
  }
}

// item makes an actor's element: a row and the list of its children.
function item(state, name) {
  const toggle = h("span.toggle");
  const li = h("li", {"data-actor": name});
  const it = {
    li, toggle,
    name: h("span.name", name.split("/").slice(-1)[0]),
    kind: h("span.kind"),
    role: h("span.role"),
    failure: h("span.failure"),
    mailbox: h("span.mailbox"),
    restarts: h("span.restarts"),
    buttons: state.canInject ? faultButtons(name, state.result) : null,
    children: h("ul"),
  };
  it.name.title = name;
  toggle.addEventListener("click", () => {
    if (collapsed.has(name)) collapsed.delete(name);
    else collapsed.add(name);
    li.classList.toggle("collapsed", collapsed.has(name));
    sessionStorage.setItem("skein.collapsed", JSON.stringify([...collapsed]));
    toggle.textContent = collapsed.has(name) ? "▸" : "▾";
  });
  it.row = h("div.row", h("span.tname", toggle, it.name), it.kind, it.role,
    h("span.stats", it.mailbox, it.restarts), it.buttons || h("span"), it.failure);
  li.append(it.row, it.children);
  return it;
}

function fill(state, it, a, now) {
  const kids = (a.children || []).length;
  it.toggle.textContent = kids ? (collapsed.has(a.name) ? "▸" : "▾") : "";
  it.li.classList.toggle("collapsed", kids > 0 && collapsed.has(a.name));
  setText(it.name, a.name.split("/").slice(-1)[0] + (kids ? ` (${kids})` : ""));
  setText(it.kind, (a.kind || "").replace(/^\*/, ""));
  setText(it.role, [a.role, a.epoch ? "epoch " + a.epoch : ""].filter(Boolean).join(" "));
  setText(it.mailbox, "mailbox " + a.mailbox_length);
  setText(it.restarts, "restarts " + a.restarts);
  it.restarts.dataset.restarts = a.restarts;
  const f = a.last_failure || state.failures.get(a.name);
  if (f) {
    const cause = f.cause || f.reason || "";
    setText(it.failure, "last failure " + (f.time || "").slice(11, 19) + " " + cause);
    it.failure.title = cause;
  }
  const at = state.restartedAt.get(a.name);
  it.li.classList.toggle("restarted", at !== undefined && now - at < RECENT_MS);
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// faultButtons inject a fault into one actor through this node's
// /v1/faults, each after a confirmation saying what it does.
function faultButtons(name, result) {
  const inject = (body) => api("/v1/faults", {method: "POST", body: {actor: name, ...body}});
  return h("span.faults",
    h("button.small.danger", {"data-fault": "panic", onclick: () => confirmThen(
      `Panic ${name} once, at the next message it handles: its supervisor restarts it (with backoff), ` +
      `and the journal shows "failed" then "restarted".`,
      () => inject({kind: "panic", count: 1, for: "60s"}), result)}, "panic"),
    h("button.small.danger", {"data-fault": "stop", onclick: () => confirmThen(
      `Stop ${name} once, at the next message it handles, as if it had stopped itself: ` +
      `what its supervisor does next is its own (a partition still hosted is respawned).`,
      () => inject({kind: "stop", count: 1, for: "60s"}), result)}, "stop"),
    h("button.small.danger", {"data-fault": "delay", onclick: () => confirmThen(
      `Delay every message ${name} handles by 500 ms, for 30 s: its mailbox may grow and its callers time out.`,
      () => inject({kind: "delay", delay: "500ms", for: "30s"}), result)}, "delay"));
}

