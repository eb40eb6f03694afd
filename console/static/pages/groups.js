// Consumer and share groups (/ui/api/groups): state, members, protocol,
// coordinator and lag; a group's page (#/groups/NAME) has its members
// with their assignments, and per partition the committed offset, the
// end and the lag, with the lag's trend drawn as it is polled.
import {Series, api, fmtNum, h, link, mark, poll, section, sparkline, table} from "../lib.js";

const POLL_MS = 2000;
const series = new Series(90); // outlives the page: a return finds the trend

export async function render(root, [name]) {
  if (name) return renderGroup(root, name);
  const err = h("div");
  const list = h("div");
  root.append(h("h1", "Groups"), err, list);
  poll(async () => {
    const d = await api("/ui/api/groups");
    const groups = Array.isArray(d) ? d : d.groups || [];
    for (const g of groups) if (g.lag >= 0) series.push(g.name, g.lag);
    list.replaceChildren(table([
      {title: "group", value: g => link(g.name, "groups", g.name)},
      {title: "type", value: g => g.type || ""},
      {title: "state", value: g => stateMark(g.state)},
      {title: "members", class: "num", value: g => String(g.members ?? "")},
      {title: "protocol", value: g => g.protocol || ""},
      {title: "coordinator", class: "num", value: g => String(g.coordinator ?? "")},
      {title: "lag", class: "num", value: g => lagOf(g.lag)},
      {title: "trend", value: g => sparkline(series.get(g.name), {width: 90, height: 18})},
    ], groups, {empty: "no group", rowAttrs: g => ({"data-group": g.name})}));
  }, POLL_MS, err);
}

function stateMark(s) {
  if (!s) return "";
  const kind = /^(Stable|STABLE)$/i.test(s) ? "ok" : /empty|dead/i.test(s) ? "info" : "warn";
  return mark(s, kind);
}

function lagOf(v) {
  return v === undefined || v === null || v < 0 ? h("span.muted", "?") : fmtNum(v);
}

async function renderGroup(root, name) {
  const err = h("div");
  const cards = h("div.cards");
  const chart = h("div#lag-chart.chart");
  const members = h("div");
  const offsets = h("div");
  root.append(h("h1", "Group ", h("code", name)), err, cards,
    section("Lag", chart), section("Members", members), section("Offsets", offsets));
  poll(async () => {
    const g = await api("/ui/api/groups/" + encodeURIComponent(name));
    const parts = g.offsets || g.partitions || [];
    const total = g.lag ?? parts.reduce((n, p) => n + Math.max(0, p.lag ?? 0), 0);
    series.push(name, total);
    for (const p of parts) series.push(`${name}\u0000${p.topic}-${p.partition}`, Math.max(0, p.lag ?? 0));
    cards.replaceChildren(
      h("div.card", h("div#group-lag.v", {"data-lag": total}, fmtNum(total)), h("div.k", "lag (records)")),
      h("div.card", h("div.v", stateMark(g.state)), h("div.k", "state")),
      h("div.card", h("div.v", String((g.members || []).length)), h("div.k", "members")),
      h("div.card", h("div.v", g.type || ""), h("div.k", g.protocol ? "protocol " + g.protocol : "type")),
      h("div.card", h("div.v", String(g.coordinator ?? "")), h("div.k", "coordinator")));
    const s = series.get(name);
    chart.replaceChildren(sparkline(s, {width: 600, height: 80, title: `lag ${total}`}),
      h("div.muted", `the last ${s.length} readings, every ${POLL_MS / 1000} s; now ${fmtNum(total)}`));
    members.replaceChildren(table([
      {title: "member", value: m => h("code", m.member_id || m.id || "")},
      {title: "instance", value: m => m.instance_id || ""},
      {title: "client", value: m => m.client_id || ""},
      {title: "host", value: m => m.host || m.client_host || ""},
      {title: "assignment", value: m => assignment(m.assignment || m.assignments)},
    ], g.members || [], {empty: "no member"}));
    offsets.replaceChildren(table([
      {title: "topic", value: p => link(p.topic, "topics", p.topic)},
      {title: "partition", class: "num", value: p => String(p.partition)},
      {title: "member", value: p => p.member || p.member_id || ""},
      {title: "committed", class: "num", value: p => p.committed < 0 ? h("span.muted", "none") : fmtNum(p.committed)},
      {title: "end", class: "num", value: p => fmtNum(p.end_offset ?? p.end)},
      {title: "lag", class: "num", value: p => lagOf(p.lag)},
      {title: "trend", value: p => sparkline(series.get(`${name}\u0000${p.topic}-${p.partition}`), {width: 90, height: 18})},
    ], parts, {empty: "no committed offset", rowAttrs: p => ({"data-partition": `${p.topic}-${p.partition}`})}));
  }, POLL_MS, err);
}

// assignment renders [{topic, partitions: [..]}] (or {topic: [..]}) as
// "orders 0, 1, 2".
function assignment(a) {
  if (!a) return "";
  const list = Array.isArray(a) ? a : Object.entries(a).map(([topic, partitions]) => ({topic, partitions}));
  return list.map(x => h("div", h("code", x.topic), " ", (x.partitions || []).join(", ")));
}
