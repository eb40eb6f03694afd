// The message browser (/ui/api/messages): records of one partition from
// an offset, the last N, from a timestamp, or those with a key (the
// partitioner names the one partition to read). Keys and values show as
// text, JSON or hex; headers beside them. #/messages/TOPIC/PARTITION
// fills the form.
import {api, fmtTime, h, link, showError, table} from "../lib.js";

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
  const decodeBar = h("span.seg", ["text", "json", "hex"].map(d =>
    h("button", {type: "button", "data-decode": d, class: d === decode ? "on" : null, onclick: () => {
      decode = d;
      decodeBar.querySelectorAll("button").forEach(b => b.classList.toggle("on", b.dataset.decode === d));
      if (last) draw(out, last);
    }}, d)));
  let last;
  const form = h("form.bar", {onsubmit: async ev => {
    ev.preventDefault();
    const q = new URLSearchParams({topic: topicSel.value, limit: limit.value});
    if (mode.value === "key") q.set("key", key.value);
    else {
      q.set("partition", part.value);
      if (mode.value === "last") q.set("offset", String(-Number(limit.value)));
      if (mode.value === "offset") q.set("offset", offset.value);
      if (mode.value === "timestamp") q.set("timestamp", String(new Date(time.value).getTime()));
    }
    out.replaceChildren(h("div.muted", "reading…"));
    try {
      last = {...await api("/ui/api/messages?" + q), topic: topicSel.value, key: mode.value === "key" ? key.value : null};
      draw(out, last);
    } catch (e) {
      showError(out, e);
    }
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

function draw(out, d) {
  const head = [];
  if (d.key !== null) {
    head.push(h("div.lookup", {"data-partition": d.partition},
      "key ", h("code", d.key), " → partition ", link(String(d.partition), "topics", d.topic),
      " (the default partitioner's choice: only that partition was read)"));
  }
  head.push(h("div.muted", `partition ${d.partition}: offsets ${d.start_offset} to ${d.end_offset}; ${d.records.length} record(s) shown`));
  out.replaceChildren(...head, table([
    {title: "partition", class: "num", value: r => String(r.partition)},
    {title: "offset", class: "num", value: r => String(r.offset)},
    {title: "timestamp", value: r => h("span", {title: String(r.timestamp)}, fmtTime(r.timestamp))},
    {title: "key", value: r => show(r.key, r.key_encoding)},
    {title: "value", value: r => show(r.value, r.value_encoding)},
    {title: "headers", value: r => (r.headers || []).length ? table([
      {title: "key", value: x => x.key},
      {title: "value", value: x => show(x.value, x.value_encoding)},
    ], r.headers) : ""},
  ], d.records, {empty: "no record", rowAttrs: r => ({"data-offset": r.offset, "data-record-partition": r.partition})}));
}

// bytesOf returns the bytes of a field the API sent as text or base64.
function bytesOf(s, enc) {
  if (enc === "base64") return Uint8Array.from(atob(s), c => c.charCodeAt(0));
  return new TextEncoder().encode(s);
}

// show renders a key, value or header value in the chosen decoding; null
// (no key, a tombstone) shows as such.
function show(s, enc) {
  if (s === null || s === undefined) return h("span.muted", "null");
  const bytes = bytesOf(s, enc);
  if (decode === "hex") {
    return h("pre", [...bytes].map(b => b.toString(16).padStart(2, "0")).join(" "));
  }
  const text = enc === "base64" ? new TextDecoder("utf-8", {fatal: false}).decode(bytes) : s;
  if (decode === "json") {
    try {
      return h("pre", JSON.stringify(JSON.parse(text), null, 2));
    } catch {
      return h("pre", h("span.mark.warn", "not JSON"), text);
    }
  }
  return h("pre", text);
}
