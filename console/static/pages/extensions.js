// Extensions (/v1/extensions): the cluster's extension instances, and for
// each the source partitions this node processes: state, lag, restarts
// and, when failed or parked, the reason. Other nodes' partitions are on
// their own consoles.
import {api, fmtNum, h, mark, poll, section, table} from "../lib.js";

const stateKind = {running: "ok", waiting: "info", failed: "bad", parked: "bad"};

export async function render(root) {
  const err = h("div");
  const list = h("div");
  root.append(h("h1", "Extensions"), err, list);
  poll(async () => {
    const d = await api("/v1/extensions");
    if (!d.extensions.length) {
      list.replaceChildren(h("p.muted", "No extension instance: `skein extension create` or POST /v1/extensions makes one."));
      return;
    }
    list.replaceChildren(...d.extensions.map(x => h("div", {"data-extension": x.name}, section(
      [h("code", x.name), " ", h("span.muted", "kind " + x.kind)],
      h("div.muted", Object.entries(x.settings || {}).map(([k, v]) => `${k}=${v}`).join("  ")),
      table([
        {title: "partition", value: s => `${s.topic}-${s.partition}`},
        {title: "node", class: "num", value: s => String(s.node)},
        {title: "state", value: s => mark(s.state, stateKind[s.state] || "warn")},
        {title: "position", class: "num", value: s => fmtNum(s.position)},
        {title: "committed", class: "num", value: s => fmtNum(s.committed)},
        {title: "end", class: "num", value: s => fmtNum(s.end)},
        {title: "lag", class: "num", value: s => s.lag > 0 ? mark(fmtNum(s.lag), "warn") : "0"},
        {title: "processed", class: "num", value: s => fmtNum(s.processed)},
        {title: "emitted", class: "num", value: s => fmtNum(s.emitted)},
        {title: "restarts", class: "num", value: s => s.restarts ? mark(String(s.restarts), "warn") : "0"},
        {title: "reason", value: s => s.reason ? h("span.failure", s.reason) : ""},
      ], x.partitions || [], {empty: "no source partition processed on this node"})))));
  }, 2000, err);
}
