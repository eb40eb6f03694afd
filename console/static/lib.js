// What the pages share: building elements, reading and writing JSON with
// its errors shown, tables, sparklines, polling that ends with the page,
// and the confirmation every fault button asks for.

// h builds an element: h("td.num", {title: "x"}, "text", child, ...).
// A tag may carry an id after "#" and classes after dots ("div#who.x");
// attributes starting with "on" are listeners; null, undefined and false
// children are skipped.
export function h(tag, attrs, ...children) {
  const [head, ...classes] = tag.split(".");
  const [name, id] = head.split("#");
  const el = document.createElement(name);
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(" ");
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className += (el.className ? " " : "") + v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// The current page's lifetime: app.js starts a new one on every route, and
// polls and fetches of the old page stop with it.
let life = new AbortController();

export function newPage() {
  life.abort();
  life = new AbortController();
  return life.signal;
}

export function pageSignal() {
  return life.signal;
}

// HTTPError is an answer other than 2xx: its message is the API's
// {"error": "..."} or the body's text.
export class HTTPError extends Error {
  constructor(status, msg) {
    super(msg);
    this.status = status;
  }
}

// api sends a request to the node and returns its JSON (null for an empty
// body). A 401 makes the browser ask for a user and password (the guard's
// WWW-Authenticate: Basic), so the pages need no login of their own.
export async function api(path, {method = "GET", body} = {}) {
  const init = {method, signal: life.signal, headers: {}};
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const msg = (data && data.error) || text.trim() || resp.statusText;
    throw new HTTPError(resp.status, `${method} ${path}: ${resp.status} ${msg}`);
  }
  return data;
}

// errorBox shows err in place of el's content (or appends it when keep).
export function showError(el, err) {
  if (err && err.name === "AbortError") return;
  el.replaceChildren(h("div.error", String(err && err.message ? err.message : err)));
}

// poll calls fn now and then every ms milliseconds after it settles, until
// the page changes. An error is shown in errEl (if given) and polling goes
// on: the node may come back.
export function poll(fn, ms, errEl) {
  const signal = life.signal;
  let timer;
  const run = async () => {
    if (signal.aborted) return;
    try {
      await fn();
      if (errEl) errEl.replaceChildren();
    } catch (err) {
      if (signal.aborted) return;
      if (errEl) showError(errEl, err);
      else console.error(err);
    }
    if (!signal.aborted) timer = setTimeout(run, ms);
  };
  signal.addEventListener("abort", () => clearTimeout(timer));
  run();
}

// table builds a table from columns [{title, value: row => node|string,
// class}] and rows.
export function table(columns, rows, {empty = "none", rowAttrs} = {}) {
  const head = h("tr", columns.map(c => h("th", {class: c.class}, c.title)));
  const body = rows.map(r => h("tr", rowAttrs ? rowAttrs(r) : null,
    columns.map(c => h("td", {class: c.class}, c.value(r)))));
  if (!rows.length) body.push(h("tr", h("td.empty", {colspan: columns.length}, empty)));
  return h("table", h("thead", head), h("tbody", body));
}

const SVG = "http://www.w3.org/2000/svg";

// sparkline draws values (oldest first) as a small SVG line, scaled from 0
// to their maximum; the last value is the title.
export function sparkline(values, {width = 120, height = 24, title} = {}) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 1 - (v / max) * (height - 2)).toFixed(1)}`);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", pts.join(" "));
  svg.append(line);
  if (title !== undefined) {
    const t = document.createElementNS(SVG, "title");
    t.textContent = title;
    svg.append(t);
  }
  return svg;
}

// Series keeps the last n values of named series, and turns cumulative
// counters into rates per second.
export class Series {
  constructor(n = 60) {
    this.n = n;
    this.values = new Map();
    this.last = new Map(); // name → [time, counter]
  }
  push(name, v) {
    const s = this.values.get(name) || [];
    s.push(v);
    if (s.length > this.n) s.shift();
    this.values.set(name, s);
    return s;
  }
  // rate records the per-second rate of a cumulative counter since its
  // last reading (nothing on the first).
  rate(name, counter, now = Date.now()) {
    const prev = this.last.get(name);
    this.last.set(name, [now, counter]);
    if (!prev || now <= prev[0]) return this.get(name);
    return this.push(name, Math.max(0, (counter - prev[1]) * 1000 / (now - prev[0])));
  }
  get(name) {
    return this.values.get(name) || [];
  }
}

// confirmThen shows what an action will do and runs it only when the user
// agrees; the result (or error) is shown in the dialog's place.
export function confirmThen(what, action, resultEl) {
  const dialog = h("dialog.confirm",
    h("p", what),
    h("div.buttons",
      h("button.cancel", {onclick: () => dialog.close()}, "Cancel"),
      h("button.danger.ok", {onclick: async () => {
        dialog.close();
        try {
          const out = await action();
          if (resultEl) resultEl.replaceChildren(h("div.ok", "Done: " + what));
          return out;
        } catch (err) {
          if (resultEl) showError(resultEl, err);
          else alert(err.message);
        }
      }}, "Do it")));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

// settings is /ui/api/settings, read once per page load.
let settingsP;
export function settings() {
  settingsP ??= api("/ui/api/settings").catch(err => {
    settingsP = undefined;
    throw err;
  });
  return settingsP;
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i ? n.toFixed(1) : String(Math.round(n))) + " " + units[i];
}

export function fmtRate(n) {
  return n >= 10 || n === 0 ? Math.round(n).toLocaleString() : n.toFixed(1);
}

export function fmtNum(n) {
  return n === undefined || n === null ? "" : Number(n).toLocaleString();
}

export function fmtTime(ms) {
  if (ms === undefined || ms === null || ms < 0) return "";
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

// list renders ids as "1, 2, 3".
export function ids(a) {
  return (a || []).join(", ");
}

// link builds an anchor to a console route, its segments escaped.
export function link(text, ...segments) {
  return h("a", {href: "#/" + segments.map(s => encodeURIComponent(s)).join("/")}, text);
}

// mark is a small coloured label: mark("offline", "bad").
export function mark(text, kind = "warn") {
  return h("span.mark." + kind, text);
}

// section is a heading with content under it.
export function section(title, ...content) {
  return h("section", h("h2", title), ...content);
}
