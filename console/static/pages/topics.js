// Topics (/ui/api/topics): each topic's partitions with their marks,
// sizes, and bytes in and out per second drawn as sparklines; a topic's
// page (#/topics/NAME) has its partitions and configs. The API's counters
// are cumulative: each poll's difference from the last is a rate.
import {Series, api, fmtBytes, fmtNum, fmtRate, h, ids, link, mark, poll, section, sparkline, table} from "../lib.js";

const POLL_MS = 2000;
// series outlives the page, so that a return to it finds its history.
const series = new Series(60);

export async function render(root, [name]) {
  if (name) return renderTopic(root, name);
  const err = h("div");
  const cards = h("div.cards");
  const list = h("div");
  const internal = h("input", {type: "checkbox", id: "show-internal"});
  root.append(h("h1", "Topics"), err, cards,
    h("label.muted", internal, " show internal topics"), list);
  let last;
  const draw = () => {
    if (!last) return;
    const topics = last.topics.filter(t => internal.checked || !t.internal);
    list.replaceChildren(table([
      {title: "topic", value: t => link(t.name, "topics", t.name)},
      {title: "partitions", class: "num", value: t => String(t.partitions.length)},
      {title: "state", value: t => marks(t)},
      {title: "records", class: "num", value: t => fmtNum(t.records)},
      {title: "size", class: "num", value: t => t.size_bytes < 0 ? "?" : fmtBytes(t.size_bytes)},
      {title: "bytes in/s", value: t => rateCell("in:" + t.name, fmtBytes)},
      {title: "bytes out/s", value: t => rateCell("out:" + t.name, fmtBytes)},
      {title: "records in/s", value: t => rateCell("rin:" + t.name, fmtRate)},
    ], topics, {empty: "no topic", rowAttrs: t => ({"data-topic": t.name})}));
  };
  internal.addEventListener("change", draw);
  poll(async () => {
    const d = await api("/ui/api/topics");
    const now = d.brokers.at_ms || Date.now();
    for (const t of d.topics) count(t.name, t, now);
    count("", d.brokers, now);
    last = d;
    cards.replaceChildren(...[
      rateCard("bytes in/s", "in:", fmtBytes), rateCard("bytes out/s", "out:", fmtBytes),
      rateCard("records in/s", "rin:", fmtRate), rateCard("records out/s", "rout:", fmtRate),
      h("div.card", h("div.v", String(d.topics.filter(t => !t.internal).length)), h("div.k", "topics")),
      d.brokers.missing_nodes && d.brokers.missing_nodes.length
        ? h("div.card", h("div.v", ids(d.brokers.missing_nodes)), h("div.k", "nodes not counted")) : null,
    ].filter(Boolean));
    if (d.sizes_error) err.replaceChildren(h("div.error", "sizes unknown: " + d.sizes_error));
    draw();
  }, POLL_MS, err);
}

// count turns a topic's (or, with name "", the cluster's) counters into
// rates.
function count(name, c, now) {
  series.rate("in:" + name, c.bytes_in_total, now);
  series.rate("out:" + name, c.bytes_out_total, now);
  series.rate("rin:" + name, c.records_in_total, now);
  if (c.records_out_total !== undefined) series.rate("rout:" + name, c.records_out_total, now);
}

function rateCell(key, fmt) {
  const s = series.get(key);
  const v = s.length ? s[s.length - 1] : 0;
  return h("span.rate", {"data-rate": v}, sparkline(s, {width: 90, height: 18, title: fmt(v) + "/s"}), " ", h("span.muted", fmt(v)));
}

function rateCard(title, prefix, fmt) {
  const s = series.get(prefix);
  const v = s.length ? s[s.length - 1] : 0;
  return h("div.card", h("div.v", fmt(v)), h("div.k", title), sparkline(s, {width: 140, height: 28}));
}

function marks(t) {
  const offline = t.partitions.filter(p => p.offline).length;
  const under = t.partitions.filter(p => p.under_replicated).length;
  return [
    t.internal ? mark("internal", "info") : null,
    offline ? mark(offline + " offline", "bad") : null,
    under ? mark(under + " under-replicated", "warn") : null,
    t.error ? mark(t.error, "bad") : null,
    !offline && !under && !t.error ? mark("ok", "ok") : null,
  ];
}

function partitionMarks(p) {
  return [
    p.offline ? mark("offline", "bad") : null,
    p.under_replicated ? mark("under-replicated", "warn") : null,
    p.error ? mark(p.error, "bad") : null,
  ];
}

async function renderTopic(root, name) {
  const err = h("div");
  const cards = h("div.cards");
  const parts = h("div");
  const configs = h("div");
  const changed = h("input", {type: "checkbox", id: "changed-only"});
  root.append(h("h1", "Topic ", h("code", name)), err, cards,
    section("Partitions", parts),
    section("Configs", h("label.muted", changed, " only those not at their default"), configs));
  let cfg = [];
  const drawConfigs = () => {
    const shown = changed.checked ? cfg.filter(c => c.source !== "DEFAULT_CONFIG") : cfg;
    configs.replaceChildren(table([
      {title: "name", value: c => h("code", c.name)},
      {title: "value", value: c => c.sensitive ? h("span.muted", "(sensitive)") : c.value === null ? h("span.muted", "null") : c.value},
      {title: "source", value: c => h("span.muted", c.source)},
    ], shown, {empty: "no config"}));
  };
  changed.addEventListener("change", drawConfigs);
  poll(async () => {
    const t = await api("/ui/api/topics/" + encodeURIComponent(name));
    const now = (t.brokers && t.brokers.at_ms) || Date.now();
    count(name, t, now);
    cards.replaceChildren(
      h("div.card", h("div.v", String(t.partitions.length)), h("div.k", "partitions")),
      h("div.card", h("div.v", fmtNum(t.records)), h("div.k", "records")),
      h("div.card", h("div.v", t.size_bytes < 0 ? "?" : fmtBytes(t.size_bytes)), h("div.k", "size")),
      rateCard("bytes in/s", "in:" + name, fmtBytes), rateCard("bytes out/s", "out:" + name, fmtBytes),
      rateCard("records in/s", "rin:" + name, fmtRate),
      h("div.card", h("div.v", marks(t)), h("div.k", t.id ? "id " + t.id : "")));
    parts.replaceChildren(table([
      {title: "partition", class: "num", value: p => link(String(p.partition), "messages", name, String(p.partition))},
      {title: "leader", class: "num", value: p => p.leader < 0 ? mark("none", "bad") : String(p.leader)},
      {title: "leader epoch", class: "num", value: p => String(p.leader_epoch)},
      {title: "replicas", value: p => ids(p.replicas)},
      {title: "ISR", value: p => ids(p.isr)},
      {title: "offline replicas", value: p => ids(p.offline_replicas)},
      {title: "state", value: partitionMarks},
      {title: "start offset", class: "num", value: p => fmtNum(p.start_offset)},
      {title: "end offset", class: "num", value: p => fmtNum(p.end_offset)},
      {title: "records", class: "num", value: p => p.end_offset < 0 || p.start_offset < 0 ? "?" : fmtNum(p.end_offset - p.start_offset)},
      {title: "size", class: "num", value: p => p.size_bytes < 0 ? "?" : fmtBytes(p.size_bytes)},
    ], t.partitions, {rowAttrs: p => ({"data-partition": p.partition})}));
    if (t.configs) {
      cfg = t.configs;
      drawConfigs();
    }
  }, POLL_MS, err);
}
