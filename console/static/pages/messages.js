// The message browser (/ui/api/messages): records of one partition from
// an offset, the last N, from a timestamp, or those with a key (the
// partitioner names the one partition to read). Keys and values show as
// text, JSON or hex (rendered by the node); headers beside them. #/messages/TOPIC/PARTITION
// fills the form.
import {api, fmtTime, h, link, mark, showError, table} from "../lib.js";

const modes = [
  ["last", "last N"],
  ["offset", "from offset"],
  ["timestamp", "from time"],
  ["key", "by key"],
];

let decode = "text"; // text | json | hex, kept across visits

export async function render(root, [topic, partition]) {
  const err = h("div");
  const out = h("div#msg-result");
  const topicSel = h("select#msg-topic", {name: "topic"});
  const mode = h("select#msg-mode", {name: "mode"}, modes.map(([v, t]) => h("option", {value: v}, t)));
  const part = h("input#msg-partition", {name: "partition", type: "number", min: 0, value: partition ?? 0, size: 5});
  const offset = h("input#msg-offset", {name: "offset", type: "number", min: 0, value: 0, size: 10});
  const time = h("input#msg-time", {name: "timestamp", type: "datetime-local", step: 1});
  const key = h("input#msg-key", {name: "key", type: "text", size: 24, placeholder: "record key"});
  const limit = h("input#msg-limit", {name: "limit", type: "number", min: 1, max: 500, value: 50, size: 5});
  const field = (label, input) => h("label", label, input);
  const fPart = field("partition", part), fOffset = field("offset", offset), fTime = field("time (local)", time), fKey = field("key", key);
  const show = () => {
    fPart.hidden = mode.value === "key";
    fOffset.hidden = mode.value !== "offset";
    fTime.hidden = mode.value !== "timestamp";
    fKey.hidden = mode.value !== "key";
  };
  mode.addEventListener("change", show);
  show();
  let lastQuery;
  const read = async q => {
    lastQuery = q;
    q.set("decode", decode);
    out.replaceChildren(h("div.muted", "reading…"));
    try {
      draw(out, await api("/ui/api/messages?" + q), q.get("topic"), next);
    } catch (e) {
      showError(out, e);
    }
  };
  // next reads the page after the one shown.
  const next = d => {
    const q = new URLSearchParams(lastQuery);
    q.delete("key");
    q.delete("timestamp");
    q.set("partition", String(d.partition));
    q.set("offset", String(d.next_offset));
    if (d.key !== undefined) q.set("key", d.key);
    read(q);
  };
  const decodeBar = h("span.seg", ["text", "json", "hex"].map(d =>
    h("button", {type: "button", "data-decode": d, class: d === decode ? "on" : null, onclick: () => {
      decode = d;
      decodeBar.querySelectorAll("button").forEach(b => b.classList.toggle("on", b.dataset.decode === d));
      if (lastQuery) read(lastQuery);
    }}, d)));
  const form = h("form.bar", {onsubmit: ev => {
    ev.preventDefault();
    const q = new URLSearchParams({topic: topicSel.value, limit: limit.value});
    if (mode.value === "key") q.set("key", key.value);
    else {
      q.set("partition", part.value);
      if (mode.value === "last") q.set("offset", String(-Number(limit.value)));
      if (mode.value === "offset") q.set("offset", offset.value);
      if (mode.value === "timestamp") q.set("timestamp", String(new Date(time.value).getTime()));
    }
    read(q);
  }},
    field("topic", topicSel), field("read", mode), fPart, fOffset, fTime, fKey, field("limit", limit),
    h("button#msg-go", {type: "submit"}, "Read"), h("span", {style: "margin-left:auto"}, "show as ", decodeBar));
  root.append(h("h1", "Messages"), err, form, out);
  try {
    const d = await api("/ui/api/topics");
    topicSel.replaceChildren(...d.topics.filter(t => !t.internal || t.name === topic)
      .map(t => h("option", {value: t.name, selected: t.name === topic}, t.name)));
  } catch (e) {
    showError(err, e);
  }
}

function draw(out, d, topic, next) {
  const head = [];
  if (d.key !== undefined && d.key !== null) {
    head.push(h("div.lookup", {"data-partition": d.partition},
      "key ", h("code", d.key), " → partition ", link(String(d.partition), "topics", topic),
      " (the default partitioner's choice: only that partition was read)"));
  }
  head.push(h("div.muted", `partition ${d.partition}: offsets ${d.start_offset} to ${d.end_offset}; ` +
    `read from ${d.from}, ${d.scanned} record(s) scanned, ${d.records.length} shown` +
    (d.complete ? "" : " (stopped before the end: the scan's bounds or deadline)")));
  out.replaceChildren(...head, table([
    {title: "partition", class: "num", value: r => String(r.partition)},
    {title: "offset", class: "num", value: r => String(r.offset)},
    {title: "timestamp", value: r => h("span", {title: String(r.timestamp)}, fmtTime(r.timestamp))},
    {title: "key", value: r => show(r.key, r.key_encoding)},
    {title: "value", value: r => [show(r.value, r.value_encoding), r.truncated ? mark("truncated", "warn") : null]},
    {title: "headers", value: r => (r.headers || []).length ? table([
      {title: "key", value: x => x.key},
      {title: "value", value: x => show(x.value, x.value_encoding)},
    ], r.headers) : ""},
  ], d.records, {empty: "no record", rowAttrs: r => ({"data-offset": r.offset, "data-record-partition": r.partition})}),
  d.next_offset < d.end_offset ? h("button", {onclick: () => next(d)}, `next from offset ${d.next_offset}`) : null);
}

// show renders a key, value or header value as the API rendered it
// (text, indented JSON, or hex: bytes that are not UTF-8 come as hex
// whatever was asked); null (no key, a tombstone) shows as such.
function show(s, enc) {
  if (s === null || s === undefined) return h("span.muted", "null");
  if (enc === "hex") {
    return h("pre", decode === "hex" ? null : mark("hex", "info"), s.replace(/(..)(?!$)/g, "$1 "));
  }
  return h("pre", s);
}
