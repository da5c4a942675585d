// Consumer (and share) groups: the list, and one group's state, members,
// assignments, committed offsets and lag per partition with a lag plot,
// and offset resets: a dry run first, then the same plan applied.

import { api, enc, h, card, pill, empty, table, toast, errorBox, go, setTitle, fmtNum } from "./app.js";
import { lineChart, paletteColor, COLORS } from "./charts.js";

let timer = null;
let chart = null;

export async function show(root, r) {
  const [group] = r.parts;
  return group === undefined ? showList(root) : showGroup(root, group);
}

export function leave() {
  clearInterval(timer);
  timer = null;
  if (chart) chart.destroy();
  chart = null;
}

function stateKind(state) {
  if (state === "Stable") return "ok";
  if (state === "Empty") return "neutral";
  if (state === "Dead") return "bad";
  return "warn";
}

// The kind of group as Kafka names it: classic groups (JoinGroup and
// SyncGroup), KIP-848 consumer groups, share groups; a classic group with
// an empty protocol type only stores offsets.
function kindOf(g) {
  if (g.group_type === "consumer") return "consumer (KIP-848)";
  if (g.group_type === "share") return "share (KIP-932)";
  if (!g.protocol_type) return "classic, offsets only";
  return "classic " + g.protocol_type;
}

async function showList(root) {
  setTitle("Groups");
  const body = h("div");
  root.replaceChildren(card("Groups", body));
  const render = async () => {
    const { groups } = await api("GET", "groups");
    body.replaceChildren(groups.length === 0
      ? empty("No groups yet", "Groups appear when a consumer joins one or commits offsets.")
      : table([
        ["Group", (g) => h("a", { href: "#/groups/" + enc(g.group_id), class: "strong" }, g.group_id)],
        ["Kind", (g) => kindOf(g)],
        ["State", (g) => pill(g.state, stateKind(g.state))],
        ["Members", (g) => fmtNum(g.members), { class: "num" }],
        ["Lag", (g) => fmtNum(g.lag), { class: "num" }],
      ], groups, { onclick: (g) => go("#/groups/" + enc(g.group_id)), testid: (g) => "group-row-" + g.group_id }));
  };
  await render();
  clearInterval(timer);
  timer = setInterval(() => render().catch(() => {}), 2000);
}

// ----- one group ------------------------------------------------------------

const MAX_SERIES = 8;
const HISTORY = 300;

async function showGroup(root, group) {
  setTitle(group);
  const summary = h("div");
  const members = h("div");
  const partitions = h("div");
  const plotBox = h("div", { class: "chart" });
  const reset = h("div");
  root.replaceChildren(
    h("div", { class: "crumbs" }, h("a", { href: "#/groups" }, "Groups"), " / ", group),
    summary,
    h("div", { class: "grid-2" }, card("Lag over time", plotBox), card("Members", members)),
    card("Committed offsets and lag", partitions),
    reset);
  const history = [];
  let series = null;
  const render = async () => {
    const g = await api("GET", "groups/" + enc(group));
    summary.replaceChildren(groupSummary(g));
    members.replaceChildren(memberTable(g));
    partitions.replaceChildren(g.group_type === "share"
      ? h("div", {}, sharePartitionTable(g), lagTable(g)) : lagTable(g));
    history.push({ t: Date.now() / 1000, g });
    if (history.length > HISTORY) history.shift();
    const keys = g.partitions.length <= MAX_SERIES ? g.partitions.map((p) => `${p.topic}-${p.partition}`) : [];
    const wanted = ["total", ...keys].join("|");
    if (series !== wanted) {
      if (chart) chart.destroy();
      plotBox.replaceChildren();
      chart = lineChart(plotBox, [
        { label: "total lag", color: COLORS.blue, fill: true },
        ...keys.map((k, i) => ({ label: k, color: paletteColor(i + 1) })),
      ], { formatY: (v) => fmtNum(Math.round(v)) });
      series = wanted;
    }
    const lagOf = (entry, key) => {
      const p = entry.g.partitions.find((p) => `${p.topic}-${p.partition}` === key);
      return p && p.lag !== null ? p.lag : null;
    };
    chart.update(history.map((e) => e.t), [
      history.map((e) => e.g.total_lag),
      ...keys.map((k) => history.map((e) => lagOf(e, k))),
    ]);
    return g;
  };
  const g = await render();
  reset.replaceChildren(resetCard(group, g));
  clearInterval(timer);
  timer = setInterval(() => render().catch(() => {}), 2000);
}

function groupSummary(g) {
  // The assignor the members agreed on; Kafka names it only while the
  // group is stable.
  const protocol = g.protocol_name;
  return h("div", { class: "tiles tiles-small", "data-testid": "group-summary" },
    summaryTile("State", pill(g.state, stateKind(g.state)), "group-state"),
    summaryTile("Kind", kindOf(g), "group-kind"),
    summaryTile(g.group_type === "classic" ? "Protocol" : "Assignor",
      (g.group_type === "classic" ? protocol : g.coordinator_assignor) || "—"),
    summaryTile(g.group_type === "classic" ? "Generation" : "Group epoch",
      g.generation === undefined ? "—" : fmtNum(g.generation)),
    summaryTile("Members", fmtNum(g.members.length)),
    summaryTile("Total lag", fmtNum(g.total_lag), "group-total-lag"));
}

function summaryTile(label, value, testid) {
  return h("div", { class: "tile" },
    h("div", { class: "tile-label" }, label), h("div", { class: "tile-value", "data-testid": testid || null }, value));
}

function chips(tps) {
  return !tps || tps.length === 0 ? "—"
    : h("div", { class: "chips" }, tps.map((tp) => h("span", { class: "chip" }, `${tp.topic}-${tp.partition}`)));
}

function memberTable(g) {
  if (g.members.length === 0) return empty("No members", "Nobody consumes right now; committed offsets stay.");
  const columns = [
    ["Member", (m) => h("span", { class: "mono small" }, m.member_id)],
    ["Client", (m) => [m.client_id || "—", m.client_host ? h("div", { class: "muted small" }, m.client_host) : null]],
  ];
  if (g.group_type !== "classic") columns.push(["Epoch", (m) => fmtNum(m.member_epoch), { class: "num" }]);
  columns.push(["Assigned", (m) => chips(m.assignment)]);
  // KIP-848 reconciles incrementally: a member gives up partitions before
  // it gets its target. Both columns show while some member is on its
  // way; a settled group needs neither.
  const key = (tps) => (tps || []).map((tp) => `${tp.topic}-${tp.partition}`).join(",");
  const reconciling = g.group_type === "consumer"
    && g.members.some((m) => (m.revoking || []).length > 0 || key(m.target) !== key(m.assignment));
  if (reconciling) {
    columns.push(["Revoking", (m) => chips(m.revoking)]);
    columns.push(["Target", (m) => chips(m.target)]);
  }
  return table(columns, g.members, { testid: (m) => "member-" + m.member_id });
}

function sharePartitionTable(g) {
  if (!g.share_partitions || g.share_partitions.length === 0) {
    return empty("No share partitions yet", "A share partition starts when a member first fetches it.");
  }
  return table([
    ["Topic", (p) => h("a", { href: "#/topics/" + enc(p.topic) }, p.topic)],
    ["Partition", (p) => p.partition, { class: "num" }],
    ["Start offset", (p) => fmtNum(p.start_offset), { class: "num" }],
    ["In-flight end", (p) => fmtNum(p.in_flight_end), { class: "num" }],
  ], g.share_partitions, { testid: (p) => `share-${p.topic}-${p.partition}` });
}

function lagTable(g) {
  if (g.partitions.length === 0) return empty("No committed offsets", "The group has not committed anything yet.");
  return table([
    ["Topic", (p) => h("a", { href: "#/topics/" + enc(p.topic) }, p.topic)],
    ["Partition", (p) => p.partition, { class: "num" }],
    ["Committed", (p) => (p.committed === null ? "—" : fmtNum(p.committed)), { class: "num" }],
    ["High watermark", (p) => fmtNum(p.high_watermark), { class: "num" }],
    ["Lag", (p) => (p.lag === null ? "—" : lagCell(p.lag)), { class: "num" }],
    ["Member", (p) => (p.member_id ? h("span", { class: "mono small" }, p.member_id) : "—")],
  ], g.partitions, { testid: (p) => `lag-${p.topic}-${p.partition}` });
}

function lagCell(lag) {
  return h("span", { class: lag > 0 ? "lag lag-behind" : "lag" }, fmtNum(lag));
}

// ----- reset offsets ----------------------------------------------------------

function resetCard(group, g) {
  const topics = [...new Set(g.partitions.map((p) => p.topic))];
  const topicSelect = h("select", { "data-testid": "reset-topic" },
    h("option", { value: "" }, "Every committed partition"),
    topics.map((t) => h("option", { value: t }, t)));
  const to = h("select", { "data-testid": "reset-to" },
    [["earliest", "Earliest"], ["latest", "Latest"], ["offset", "To offset"], ["shift", "Shift by"], ["timestamp", "To time"]]
      .map(([v, l]) => h("option", { value: v }, l)));
  const value = h("input", { type: "number", placeholder: "offset or shift", class: "narrow", "data-testid": "reset-value" });
  const time = h("input", { type: "datetime-local", step: "1" });
  const showInputs = () => {
    value.parentElement.hidden = !["offset", "shift"].includes(to.value);
    time.parentElement.hidden = to.value !== "timestamp";
    planBox.replaceChildren();
    apply.hidden = true;
  };
  to.addEventListener("change", showInputs);
  topicSelect.addEventListener("change", showInputs);
  value.addEventListener("input", () => { planBox.replaceChildren(); apply.hidden = true; });
  const planBox = h("div", { "data-testid": "reset-plan" });
  const request = (execute) => {
    const body = { topics: topicSelect.value ? [topicSelect.value] : [], to: to.value, execute };
    if (to.value === "offset" || to.value === "shift") body.value = Number(value.value);
    if (to.value === "timestamp") body.value = new Date(time.value).getTime();
    return body;
  };
  const preview = async () => {
    try {
      const answer = await api("POST", `groups/${enc(group)}/reset-offsets`, request(false));
      planBox.replaceChildren(planTable(answer, false));
      apply.hidden = false;
    } catch (e) {
      planBox.replaceChildren(errorBox(e));
    }
  };
  const apply = h("button", { class: "btn btn-danger", hidden: true, "data-testid": "reset-apply", onclick: async () => {
    try {
      const answer = await api("POST", `groups/${enc(group)}/reset-offsets`, request(true));
      planBox.replaceChildren(planTable(answer, true));
      apply.hidden = true;
      toast(`Offsets of ${group} reset`);
    } catch (e) {
      planBox.replaceChildren(errorBox(e));
    }
  } }, "Apply this reset");
  const form = h("div", { class: "controls" },
    h("label", { class: "field field-inline" }, h("span", {}, "Partitions"), topicSelect),
    h("label", { class: "field field-inline" }, h("span", {}, "Move to"), to),
    h("label", { class: "field field-inline", hidden: true }, h("span", {}, "Value"), value),
    h("label", { class: "field field-inline", hidden: true }, h("span", {}, "Time"), time),
    h("button", { class: "btn btn-primary", type: "button", onclick: preview, "data-testid": "reset-preview" }, "Preview (dry run)"),
    apply);
  return card("Reset offsets", h("div", {},
    h("p", { class: "muted" }, "A reset is a commit from outside the group: stop the group's consumers first. Preview shows where each partition would move; nothing changes until you apply it."),
    form, planBox));
}

function planTable(answer, executed) {
  return h("div", {},
    h("div", { class: executed ? "plan-note plan-done" : "plan-note", "data-testid": "reset-status" },
      executed ? "Applied: the group's committed offsets are now these." : "Dry run: nothing changed yet."),
    table([
      ["Topic", (r) => r.topic],
      ["Partition", (r) => r.partition, { class: "num" }],
      ["Current", (r) => (r.current === null ? "—" : fmtNum(r.current)), { class: "num" }],
      ["New offset", (r) => h("strong", {}, fmtNum(r.target)), { class: "num" }],
      ["Change", (r) => (r.current === null ? "new" : delta(r.target - r.current)), { class: "num" }],
    ], answer.plan, { testid: (r) => `plan-${r.topic}-${r.partition}` }));
}

function delta(d) {
  if (d === 0) return "±0";
  return (d > 0 ? "+" : "−") + fmtNum(Math.abs(d));
}
