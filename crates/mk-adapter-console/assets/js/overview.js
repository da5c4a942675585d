// Overview: brokers, partition health, disk and traffic as stat tiles and
// live plots drawn from the shell's overview samples.

import { h, card, pill, fmtBytes, fmtNum, fmtDuration, plural, samples, onSample, setTitle } from "./app.js";
import { lineChart, rates, COLORS } from "./charts.js";

let unsubscribe = null;
let charts = [];

export async function show(root) {
  setTitle("Overview");
  const tiles = h("div", { class: "tiles", "data-testid": "overview-tiles" });
  const alerts = h("div", { class: "alerts" });
  const plots = h("div", { class: "grid-2" });
  const brokers = h("div");
  root.replaceChildren(alerts, tiles, plots, card("Brokers", brokers));

  const throughput = chartCard(plots, "Throughput (records/s)", [
    { label: "produced", color: COLORS.blue, fill: true },
    { label: "fetched", color: COLORS.teal },
  ], fmtRate);
  const partitions = chartCard(plots, "Partitions", [
    { label: "online", color: COLORS.teal, step: true },
    { label: "under-replicated", color: COLORS.amber, step: true },
    { label: "offline", color: COLORS.red, step: true },
    { label: "damaged", color: COLORS.violet, step: true },
  ], (v) => fmtNum(Math.round(v)), true);
  const brokerChart = chartCard(plots, "Brokers", [
    { label: "online", color: COLORS.teal, step: true, fill: true },
    { label: "offline", color: COLORS.red, step: true },
  ], (v) => fmtNum(Math.round(v)), true);
  const disk = chartCard(plots, "Disk", [
    { label: "log data", color: COLORS.blue, fill: true },
  ], fmtBytes);
  charts = [throughput, partitions, brokerChart, disk];

  const render = (o) => {
    tiles.replaceChildren(...statTiles(o));
    alerts.replaceChildren(...alertBoxes(o));
    brokers.replaceChildren(brokerList(o));
    const xs = samples.map((s) => s.sampled_at);
    const [rx, produced] = rates(samples, (s) => s.traffic.produced_records);
    const [, fetched] = rates(samples, (s) => s.traffic.fetched_records);
    throughput.update(rx, [produced, fetched]);
    partitions.update(xs, [
      samples.map((s) => s.partitions.online),
      samples.map((s) => s.partitions.under_replicated),
      samples.map((s) => s.partitions.offline),
      samples.map((s) => s.partitions.damaged),
    ]);
    brokerChart.update(xs, [
      samples.map((s) => s.brokers.filter((b) => b.online).length),
      samples.map((s) => s.brokers.filter((b) => !b.online).length),
    ]);
    disk.update(xs, [samples.map((s) => s.log_bytes)]);
  };
  if (samples.length) render(samples[samples.length - 1]);
  unsubscribe = onSample(render);
}

export function leave() {
  if (unsubscribe) unsubscribe();
  for (const c of charts) c.destroy();
  charts = [];
}

function fmtRate(v) {
  if (v === null || v === undefined) return "—";
  return v >= 100 ? fmtNum(Math.round(v)) : String(Math.round(v * 10) / 10);
}

function chartCard(parent, title, series, formatY, integer) {
  const box = h("div", { class: "chart" });
  parent.append(card(title, box));
  return lineChart(box, series, { formatY, integer });
}

function tile(label, value, sub, kind, testid) {
  return h("div", { class: "tile" + (kind ? " tile-" + kind : ""), "data-testid": testid || null },
    h("div", { class: "tile-label" }, label),
    h("div", { class: "tile-value" }, value),
    sub ? h("div", { class: "tile-sub" }, sub) : null);
}

function statTiles(o) {
  const p = o.partitions;
  const online = o.brokers.filter((b) => b.online).length;
  const diskSub = o.disk
    ? `${fmtBytes(o.disk.available_bytes)} free of ${fmtBytes(o.disk.total_bytes)}`
    : "file system unknown";
  return [
    tile("Brokers online", `${online} / ${o.brokers.length}`, null, online < o.brokers.length ? "warn" : null, "tile-brokers"),
    tile("Partitions online", `${fmtNum(p.online)} / ${fmtNum(p.total)}`, plural(o.topics, "topic"), null, "tile-partitions"),
    tile("Under-replicated", fmtNum(p.under_replicated), null, p.under_replicated ? "warn" : null, "tile-under-replicated"),
    tile("Offline", fmtNum(p.offline), null, p.offline ? "bad" : null, "tile-offline"),
    tile("Damaged", fmtNum(p.damaged), null, p.damaged ? "bad" : null, "tile-damaged"),
    tile("Log data", fmtBytes(o.log_bytes), diskSub, o.disk_full ? "bad" : null, "tile-disk"),
    tile("Groups", fmtNum(o.groups), plural(o.transactions, "transactional id"), null, "tile-groups"),
    tile("Uptime", fmtDuration(o.uptime_ms), `${plural(o.records, "offset")} written`, null, "tile-uptime"),
  ];
}

function alertBoxes(o) {
  const out = [];
  if (o.disk_full) {
    out.push(h("div", { class: "alert alert-bad", "data-testid": "alert-disk-full" },
      h("strong", {}, "Disk full. "),
      `Writes fail since ${new Date(o.disk_full.since_ms).toLocaleTimeString()} (${o.disk_full.path}); reads go on. Free space and writes resume.`));
  }
  for (const d of o.damaged) {
    out.push(h("div", { class: "alert alert-bad", "data-testid": "alert-damaged" },
      h("strong", {}, `${d.topic}-${d.partition} is damaged. `),
      h("a", { href: `#/topics/${encodeURIComponent(d.topic)}/${d.partition}` }, "Details"),
      h("div", { class: "mono small" }, d.cause)));
  }
  return out;
}

function brokerList(o) {
  return h("div", { class: "brokers" }, o.brokers.map((b) =>
    h("div", { class: "broker" + (b.online ? "" : " broker-off"), "data-testid": "broker-" + b.id },
      h("div", { class: "broker-id" }, "Broker " + b.id),
      b.online ? pill("online", "ok") : pill("offline", "bad"))));
}
