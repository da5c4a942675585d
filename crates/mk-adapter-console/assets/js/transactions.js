// Transactions: every transactional id's current state (open ones first)
// and the transactions completed since the broker started.

import { api, h, card, pill, empty, table, setTitle, fmtDuration, fmtTime } from "./app.js";

let timer = null;

export function leave() {
  clearInterval(timer);
  timer = null;
}

const OPEN = ["Ongoing", "PrepareCommit", "PrepareAbort"];

function stateKind(state) {
  if (state === "CompleteCommit") return "ok";
  if (state === "CompleteAbort") return "bad";
  if (state === "Ongoing") return "info";
  if (state.startsWith("Prepare")) return "warn";
  return "neutral";
}

function partitions(ps) {
  if (ps.length === 0) return "—";
  return h("div", { class: "chips" }, ps.map((tp) => h("span", { class: "chip" }, `${tp.topic}-${tp.partition}`)));
}

export async function show(root) {
  setTitle("Transactions");
  const open = h("div");
  const recent = h("div");
  const ids = h("div");
  root.replaceChildren(card("Open transactions", open), card("Recently completed", recent), card("Transactional ids", ids));
  const render = async () => {
    const t = await api("GET", "transactions");
    const now = Date.now();
    const current = t.transactions.filter((x) => OPEN.includes(x.state));
    open.replaceChildren(current.length === 0
      ? empty("No open transactions", "A transaction shows here from its first partition until its markers are written.")
      : table([
        ["Transactional id", (x) => h("span", { class: "strong" }, x.transactional_id)],
        ["State", (x) => [pill(x.state, stateKind(x.state)), x.abort_only ? pill("abort only", "bad") : null]],
        ["Producer", (x) => `${x.producer_id} / epoch ${x.producer_epoch}`],
        ["Partitions", (x) => partitions(x.partitions)],
        ["Open for", (x) => fmtDuration(now - x.start_ms)],
        ["Timeout", (x) => fmtDuration(x.timeout_ms)],
      ], current, { testid: (x) => "txn-open-" + x.transactional_id }));
    recent.replaceChildren(t.recent.length === 0
      ? empty("Nothing completed yet", "Committed and aborted transactions since the broker started show here.")
      : table([
        ["Transactional id", (x) => h("span", { class: "strong" }, x.transactional_id)],
        ["Outcome", (x) => pill(x.state === "CompleteCommit" ? "committed" : "aborted", stateKind(x.state))],
        ["Producer", (x) => `${x.producer_id} / epoch ${x.producer_epoch}`],
        ["Partitions", (x) => partitions(x.partitions)],
        ["Took", (x) => fmtDuration(x.completed_ms - x.start_ms)],
        ["Completed", (x) => fmtTime(x.completed_ms)],
      ], t.recent, { testid: (x) => "txn-recent-" + x.transactional_id }));
    ids.replaceChildren(t.transactions.length === 0
      ? empty("No transactional producers yet")
      : table([
        ["Transactional id", (x) => x.transactional_id],
        ["State", (x) => pill(x.state, stateKind(x.state))],
        ["Producer", (x) => `${x.producer_id} / epoch ${x.producer_epoch}`],
        ["Groups", (x) => x.groups.join(", ") || "—"],
      ], t.transactions));
  };
  await render();
  clearInterval(timer);
  timer = setInterval(() => render().catch(() => {}), 3000);
}
