// The cluster: its nodes as this node's image knows them (fenced or not,
// incarnation), the controller quorum, and, with chaos on for a super
// user, the faults on this node's links to each other node and the
// pause of this node.
import {api, confirmThen, h, mark, poll, section, settings, table} from "../lib.js";

export async function render(root) {
  const s = await settings();
  const title = h("h1", "Cluster");
  const err = h("div");
  const cards = h("div.cards");
  const nodes = h("div");
  const result = h("div");
  const faults = h("div");
  const quorum = h("div");
  root.append(title, err, cards, section("Nodes", nodes), result, section("Controller quorum", quorum),
    s.can_inject ? section("Faults on this node", faults) : null);

  poll(async () => {
    const [c, links] = await Promise.all([api("/v1/cluster"), s.can_inject ? api("/v1/links") : {links: []}]);
    title.textContent = "Cluster " + c.cluster_id;
    const voters = new Set((c.quorum.voters || []).map(v => v.id));
    cards.replaceChildren(
      card("this node", c.node),
      card("quorum leader", c.quorum.leader < 0 ? "none" : c.quorum.leader),
      card("term", c.quorum.term),
      card("commit index", c.quorum.commit_index),
      card("applied index", c.quorum.applied_index),
      card("brokers fenced", c.brokers.filter(b => b.fenced).length + " of " + c.brokers.length));
    const cut = new Map(links.links.map(l => [l.peer, l]));
    const cols = [
      {title: "node", class: "num", value: b => String(b.id)},
      {title: "Kafka listener", value: b => `${b.host}:${b.port}`},
      {title: "cluster address", value: b => b.cluster_addr || ""},
      {title: "rack", value: b => b.rack || ""},
      {title: "roles", value: b => b.roles ? b.roles.join(", ") : (voters.has(b.id) ? "broker, controller" : c.quorum.voters ? "broker" : "")},
      {title: "state", value: b => [
        b.fenced ? mark("fenced", "bad") : mark("unfenced", "ok"),
        b.id === c.quorum.leader ? mark("quorum leader", "info") : null,
        b.id === c.node ? mark("this node", "info") : null,
        cut.has(b.id) ? mark(linkText(cut.get(b.id)), "warn") : null]},
      {title: "incarnation", class: "num", value: b => String(b.incarnation)},
    ];
    if (s.can_inject) cols.push({title: "faults", value: b => b.id === c.node ? pauseButton(c.node, result) : linkButtons(c.node, b.id, cut.has(b.id), result)});
    nodes.replaceChildren(table(cols, c.brokers, {rowAttrs: b => ({"data-node": b.id})}));
    const now = Date.now();
    const ago = ms => ms < 0 ? "never" : ((now - ms) / 1000).toFixed(1) + " s ago";
    const members = [...(c.quorum.voters || []).map(v => ({...v, role: "voter"})), ...(c.quorum.observers || []).map(v => ({...v, role: "observer"}))];
    quorum.replaceChildren(table([
      {title: "node", class: "num", value: v => String(v.id)},
      {title: "role", value: v => [v.role, v.id === c.quorum.leader ? mark("leader", "info") : null]},
      {title: "log end", class: "num", value: v => String(v.log_end)},
      {title: "lag", class: "num", value: v => v.lag > 0 ? mark(String(v.lag), "warn") : "0"},
      {title: "last fetch", value: v => v.id === c.quorum.leader ? "" : ago(v.last_fetch_ms)},
      {title: "last caught up", value: v => v.id === c.quorum.leader ? "" : ago(v.last_caught_up_ms)},
    ], members, {empty: "the active controller did not answer"}));
    if (s.can_inject) faults.replaceChildren(await faultList(result));
  }, 2000, err);
}

function card(k, v) {
  return h("div.card", h("div.v", String(v)), h("div.k", k));
}

function linkText(l) {
  const parts = [];
  if (l.cut) parts.push("cut");
  if (l.drop) parts.push(`drop ${Math.round(l.drop * 100)}%`);
  if (l.delay) parts.push("delay " + l.delay);
  return "link " + parts.join(", ");
}

// linkButtons cut and heal the link between this node and peer, both
// ways: this node asks peer, over remoting, to set or heal its side too.
function linkButtons(self, peer, isCut, result) {
  const cut = h("button.small.danger", {"data-fault": "cut", onclick: () => confirmThen(
    `Cut the link between node ${self} and node ${peer} for 30 s, both ways: each drops every message ` +
    `it sends to the other (replication, controller traffic).`,
    () => api("/v1/links", {method: "POST", body: {peer, cut: true, both: true, for: "30s"}}), result)}, "cut");
  const heal = h("button.small", {"data-fault": "heal", onclick: () => confirmThen(
    `Heal the link between node ${self} and node ${peer}: remove every fault on it, on both sides.`,
    () => api("/v1/links/" + peer + "?both=true", {method: "DELETE"}), result)}, "heal");
  return h("span.faults", cut, isCut ? heal : null);
}

function pauseButton(self, result) {
  return h("button.small.danger", {"data-fault": "pause", onclick: () => confirmThen(
    `Pause node ${self} for 10 s: the process stops handling anything (as a long GC pause or a frozen VM) ` +
    `and this console stops answering until it resumes.`,
    () => api("/v1/pause", {method: "POST", body: {for: "10s"}}), result)}, "pause 10 s");
}

// faultList shows the actor and link faults set on this node, each with a
// button to remove it.
async function faultList(result) {
  const [f, l] = await Promise.all([api("/v1/faults"), api("/v1/links")]);
  const rows = [
    ...f.faults.map(x => ({what: `${x.kind} ${x.actor}` + (x.count ? ` ×${x.count}` : "") + (x.delay ? ` ${x.delay}` : ""),
      fired: x.fired || 0, expires: x.expires, del: () => api("/v1/faults/" + x.id, {method: "DELETE"}), desc: `Remove fault ${x.id} (${x.kind} ${x.actor}).`})),
    ...l.links.map(x => ({what: linkText(x) + " to node " + x.peer, expires: x.expires,
      del: () => api("/v1/links/" + x.peer, {method: "DELETE"}), desc: `Heal the link from this node to node ${x.peer}.`})),
  ];
  const heal = h("button.small", {onclick: () => confirmThen("Heal everything on this node: every actor, link, clock and disk fault.",
    () => api("/v1/chaos", {method: "DELETE"}), result)}, "heal all");
  return h("div", table([
    {title: "fault", value: r => r.what},
    {title: "fired", class: "num", value: r => r.fired === undefined ? "" : String(r.fired)},
    {title: "expires", value: r => r.expires || ""},
    {title: "", value: r => h("button.small", {onclick: () => confirmThen(r.desc, r.del, result)}, "remove")},
  ], rows, {empty: "no fault set"}), rows.length ? heal : null);
}
