// Transactions (/ui/api/transactions) and the producers writing to a
// topic's partitions (/ui/api/producers?topic=T): #/transactions/TOPIC
// shows that topic's producers.
import {api, fmtNum, fmtTime, h, link, mark, poll, section, table} from "../lib.js";

export async function render(root, [topic]) {
  const err = h("div");
  const txns = h("div");
  const producers = h("div");
  const pick = h("select#producers-topic", {onchange: () => { location.hash = "#/transactions/" + encodeURIComponent(pick.value); }});
  root.append(h("h1", "Transactions and producers"), err,
    section("Transactions", txns),
    section("Producers of a topic ", pick), producers);
  api("/ui/api/topics").then(d => {
    pick.replaceChildren(h("option", {value: ""}, "choose a topic"),
      ...d.topics.map(t => h("option", {value: t.name, selected: t.name === topic}, t.name)));
  }).catch(() => {});
  poll(async () => {
    const d = await api("/ui/api/transactions");
    const list = Array.isArray(d) ? d : d.transactions || [];
    txns.replaceChildren(table([
      {title: "transactional id", value: x => h("code", x.transactional_id)},
      {title: "state", value: x => mark(x.state, /ongoing|prepare/i.test(x.state) ? "warn" : /abort/i.test(x.state) ? "bad" : "ok")},
      {title: "producer id", class: "num", value: x => String(x.producer_id)},
      {title: "epoch", class: "num", value: x => String(x.producer_epoch ?? "")},
      {title: "timeout", class: "num", value: x => x.timeout_ms ? x.timeout_ms / 1000 + " s" : ""},
      {title: "started", value: x => fmtTime(x.start_ms ?? x.start_timestamp)},
      {title: "coordinator", class: "num", value: x => String(x.coordinator ?? "")},
      {title: "partitions", value: x => (x.partitions || []).map(p => typeof p === "string" ? p : `${p.topic}-${p.partition}`).join(", ")},
    ], list, {empty: "no transactional id", rowAttrs: x => ({"data-txn": x.transactional_id})}));
    if (!topic) return;
    const p = await api("/ui/api/producers?topic=" + encodeURIComponent(topic));
    const rows = (Array.isArray(p) ? p : p.partitions || []).flatMap(part =>
      (part.producers || part.active_producers || []).map(x => ({...x, partition: part.partition, error: part.error})));
    producers.replaceChildren(table([
      {title: "partition", class: "num", value: r => link(String(r.partition), "messages", topic, String(r.partition))},
      {title: "producer id", class: "num", value: r => String(r.producer_id)},
      {title: "epoch", class: "num", value: r => String(r.producer_epoch ?? r.epoch ?? "")},
      {title: "last sequence", class: "num", value: r => String(r.last_sequence ?? "")},
      {title: "last write", value: r => fmtTime(r.last_timestamp)},
      {title: "coordinator epoch", class: "num", value: r => String(r.coordinator_epoch ?? "")},
      {title: "open transaction from", class: "num", value: r => r.current_txn_start_offset >= 0 ? fmtNum(r.current_txn_start_offset) : ""},
    ], rows, {empty: "no producer state on these partitions", rowAttrs: r => ({"data-producer": r.producer_id})}));
  }, 3000, err);
}
