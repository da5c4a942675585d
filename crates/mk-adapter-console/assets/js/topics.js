// Topics: the list (create), one topic (configs, partitions, delete) and
// one partition's internals (offsets, replicas, epochs, segments).

import {
  api, enc, h, card, pill, empty, table, toast, errorBox, go, setTitle,
  fmtBytes, fmtNum, fmtTime, healthPill,
} from "./app.js";

let timer = null;

export async function show(root, r) {
  const [name, partition] = r.parts;
  if (name !== undefined && partition !== undefined) return showPartition(root, name, Number(partition));
  if (name !== undefined) return showTopic(root, name);
  return showList(root);
}

export function leave() {
  clearInterval(timer);
  timer = null;
}

// Re-renders every `ms` while the view stays open.
function every(ms, f) {
  clearInterval(timer);
  timer = setInterval(() => f().catch(() => {}), ms);
}

// ----- the list -------------------------------------------------------------

async function showList(root) {
  setTitle("Topics");
  const list = h("div");
  const form = createForm();
  form.hidden = true;
  const newButton = h("button", { class: "btn btn-primary", "data-testid": "new-topic",
    onclick: () => { form.hidden = !form.hidden; if (!form.hidden) form.querySelector("input").focus(); } }, "New topic");
  root.replaceChildren(form, card("Topics", list, newButton));
  const render = async () => {
    const { topics } = await api("GET", "topics");
    list.replaceChildren(topics.length === 0
      ? empty("No topics yet", "Create one with New topic, or let a Kafka client create it.")
      : topicTable(topics));
  };
  await render();
  every(3000, render);
}

function config(t, key) {
  const c = t.configs.find((c) => c.name === key);
  return c ? c.value : "—";
}

function topicTable(topics) {
  return table([
    ["Name", (t) => h("a", { href: "#/topics/" + enc(t.name), class: "strong" }, t.name)],
    ["Partitions", (t) => fmtNum(t.partitions), { class: "num" }],
    ["Replicas", (t) => fmtNum(t.replication_factor), { class: "num" }],
    ["Size", (t) => fmtBytes(t.size_bytes), { class: "num" }],
    ["Cleanup", (t) => config(t, "cleanup.policy")],
    ["Retention", (t) => retention(config(t, "retention.ms"))],
    ["Health", (t) => topicHealth(t)],
  ], topics, { onclick: (t) => go("#/topics/" + enc(t.name)), testid: (t) => "topic-row-" + t.name });
}

function retention(ms) {
  const n = Number(ms);
  if (ms === "—" || n < 0) return "forever";
  if (n % 86400000 === 0) return n / 86400000 + " d";
  if (n % 3600000 === 0) return n / 3600000 + " h";
  return fmtNum(n) + " ms";
}

function topicHealth(t) {
  if (t.damaged) return pill(`${t.damaged} damaged`, "bad");
  if (t.offline) return pill(`${t.offline} offline`, "bad");
  if (t.under_replicated) return pill(`${t.under_replicated} under-replicated`, "warn");
  return pill("healthy", "ok");
}

function createForm() {
  const name = h("input", { name: "name", placeholder: "orders", required: true, "data-testid": "topic-name", autocomplete: "off" });
  const partitions = h("input", { name: "partitions", type: "number", min: "1", value: "3" });
  const rf = h("input", { name: "rf", type: "number", min: "1", value: "1" });
  const configs = keyValueRows("Config", "retention.ms", "86400000");
  const error = h("div");
  const submit = async (ev) => {
    ev.preventDefault();
    error.replaceChildren();
    try {
      await api("POST", "topics", {
        name: name.value.trim(),
        partitions: Number(partitions.value),
        replication_factor: Number(rf.value),
        configs: Object.fromEntries(configs.pairs().filter(([k]) => k)),
      });
      toast(`Topic ${name.value.trim()} created`);
      go("#/topics/" + enc(name.value.trim()));
    } catch (e) {
      error.replaceChildren(errorBox(e));
    }
  };
  return h("form", { class: "card form", onsubmit: submit, "data-testid": "create-topic-form" },
    h("div", { class: "card-head" }, h("h2", {}, "New topic")),
    h("div", { class: "form-row" },
      field("Name", name), field("Partitions", partitions), field("Replication factor", rf)),
    configs.node,
    error,
    h("div", { class: "form-actions" }, h("button", { class: "btn btn-primary", type: "submit", "data-testid": "create-topic" }, "Create topic")));
}

function field(label, input, hint) {
  return h("label", { class: "field" }, h("span", {}, label), input, hint ? h("small", { class: "muted" }, hint) : null);
}

// Rows of key/value inputs with add and remove buttons.
export function keyValueRows(what, keyHint, valueHint) {
  const rows = h("div", { class: "kv-rows" });
  const add = (k = "", v = "") => {
    const row = h("div", { class: "kv-row" },
      h("input", { placeholder: keyHint, value: k, "aria-label": what + " name" }),
      h("input", { placeholder: valueHint, value: v, "aria-label": what + " value" }),
      h("button", { type: "button", class: "btn btn-ghost", title: "Remove", onclick: () => row.remove() }, "×"));
    rows.append(row);
  };
  const node = h("div", { class: "kv" }, h("div", { class: "kv-head" }, what + "s"), rows,
    h("button", { type: "button", class: "btn btn-small", onclick: () => add() }, "Add " + what.toLowerCase()));
  return {
    node,
    add,
    pairs: () => [...rows.children].map((r) => {
      const [k, v] = r.querySelectorAll("input");
      return [k.value.trim(), v.value];
    }),
  };
}

// ----- one topic ------------------------------------------------------------

async function showTopic(root, name) {
  setTitle(name);
  const body = h("div");
  root.replaceChildren(h("div", { class: "crumbs" }, h("a", { href: "#/topics" }, "Topics"), " / ", name), body);
  const render = async () => {
    const t = await api("GET", "topics/" + enc(name));
    body.replaceChildren(
      card("Partitions", partitionTable(t), h("a", { class: "btn", href: `#/messages?topic=${enc(name)}` }, "Browse messages")),
      h("div", { class: "grid-2" }, configCard(t), dangerCard(t)));
  };
  await render();
  every(3000, async () => {
    // Keep a config being edited as it is.
    if (!body.querySelector(".editing")) await render();
  });
}

function partitionTable(t) {
  return table([
    ["#", (p) => h("a", { href: `#/topics/${enc(t.name)}/${p.partition}`, class: "strong" }, p.partition), { class: "num" }],
    ["Leader", (p) => p.leader, { class: "num" }],
    ["Epoch", (p) => p.leader_epoch, { class: "num" }],
    ["Replicas", (p) => p.replicas.join(", ")],
    ["ISR", (p) => p.isr.join(", ") || "—"],
    ["Log start", (p) => fmtNum(p.log_start_offset), { class: "num" }],
    ["LSO", (p) => fmtNum(p.last_stable_offset), { class: "num" }],
    ["HW", (p) => fmtNum(p.high_watermark), { class: "num" }],
    ["LEO", (p) => fmtNum(p.log_end_offset), { class: "num" }],
    ["Produced", (p) => fmtNum(p.traffic.produced_records), { class: "num" }],
    ["Status", (p) => healthPill(p.health, p.under_replicated)],
  ], t.partitions, {
    onclick: (p) => go(`#/topics/${enc(t.name)}/${p.partition}`),
    testid: (p) => "partition-row-" + p.partition,
    rowClass: (p) => (p.health !== "online" ? "row-bad" : null),
  });
}

function configCard(t) {
  const rows = t.configs.map((c) => {
    const input = h("input", { value: c.value, "data-testid": "config-" + c.name, "aria-label": c.name });
    input.addEventListener("input", () => input.classList.add("editing"));
    const save = async () => {
      try {
        await api("PATCH", `topics/${enc(t.name)}/configs`, { set: { [c.name]: input.value.trim() } });
        toast(`${c.name} set to ${input.value.trim()}`);
        input.classList.remove("editing");
        go(location.hash);
      } catch (e) {
        toast(e.message, "bad");
      }
    };
    const reset = async () => {
      try {
        await api("PATCH", `topics/${enc(t.name)}/configs`, { reset: [c.name] });
        toast(`${c.name} back to the default`);
        go(location.hash);
      } catch (e) {
        toast(e.message, "bad");
      }
    };
    input.addEventListener("keydown", (ev) => { if (ev.key === "Enter") save(); });
    return h("tr", {},
      h("td", { class: "mono" }, c.name),
      h("td", {}, input),
      h("td", {}, c.is_default ? pill("default", "neutral") : pill("set", "info")),
      h("td", { class: "actions" },
        h("button", { class: "btn btn-small", onclick: save, "data-testid": "save-" + c.name }, "Save"),
        c.is_default ? null : h("button", { class: "btn btn-small btn-ghost", onclick: reset }, "Reset")));
  });
  return card("Configuration", h("div", { class: "table-wrap" }, h("table", { class: "configs" }, h("tbody", {}, rows))));
}

function dangerCard(t) {
  const confirmInput = h("input", { placeholder: t.name, "data-testid": "delete-confirm", autocomplete: "off" });
  const button = h("button", { class: "btn btn-danger", disabled: true, "data-testid": "delete-topic" }, "Delete topic");
  confirmInput.addEventListener("input", () => {
    confirmInput.classList.add("editing");
    button.disabled = confirmInput.value !== t.name;
  });
  button.addEventListener("click", async () => {
    try {
      await api("DELETE", `topics/${enc(t.name)}?confirm=${enc(t.name)}`);
      toast(`Topic ${t.name} deleted`);
      go("#/topics");
    } catch (e) {
      toast(e.message, "bad");
    }
  });
  return card("Delete", h("div", { class: "danger" },
    h("p", {}, "Deleting removes every partition's data and the groups' committed offsets for this topic. It cannot be undone."),
    h("label", { class: "field" }, h("span", {}, `Type ${t.name} to confirm`), confirmInput),
    button));
}

// ----- one partition ----------------------------------------------------------

async function showPartition(root, name, partition) {
  setTitle(`${name} / ${partition}`);
  const body = h("div");
  root.replaceChildren(h("div", { class: "crumbs" },
    h("a", { href: "#/topics" }, "Topics"), " / ", h("a", { href: "#/topics/" + enc(name) }, name), " / partition " + partition), body);
  const render = async () => {
    const p = await api("GET", `topics/${enc(name)}/partitions/${partition}`);
    body.replaceChildren(...partitionDetail(name, p));
  };
  await render();
  every(3000, render);
}

function partitionDetail(name, p) {
  const facts = h("dl", { class: "facts" },
    fact("Status", healthPill(p.health, p.under_replicated)),
    fact("Leader", `broker ${p.leader} (epoch ${p.leader_epoch})`),
    fact("Replicas", p.replicas.join(", ")),
    fact("In-sync replicas", p.isr.join(", ") || "none"),
    fact("Produced / fetched", `${fmtNum(p.traffic.produced_records)} / ${fmtNum(p.traffic.fetched_records)} records`));
  const out = [];
  if (p.damaged) {
    out.push(h("div", { class: "alert alert-bad", "data-testid": "partition-damaged" },
      h("strong", {}, "This partition is damaged and offline. "), "Every request for it answers STORAGE_ERROR.",
      h("div", { class: "mono small" }, p.damaged)));
  }
  out.push(h("div", { class: "grid-2" },
    card("Partition", facts, h("a", { class: "btn", href: `#/messages?topic=${enc(name)}&partition=${p.partition}` }, "Browse messages")),
    card("Offsets", offsetBar(p))));
  out.push(h("div", { class: "grid-2" },
    card("Replicas", replicaTable(p)),
    card("Leader epochs", p.epochs.length === 0 ? empty("No epoch history") : table([
      ["Epoch", (e) => e.epoch, { class: "num" }],
      ["First offset", (e) => fmtNum(e.start_offset), { class: "num" }],
    ], p.epochs))));
  out.push(card("Segments", segmentTable(p)));
  if (p.open_transactions.length) {
    out.push(card("Open transactions", table([
      ["Producer id", (t) => t.producer_id, { class: "num" }],
      ["First offset", (t) => fmtNum(t.first_offset), { class: "num" }],
    ], p.open_transactions)));
  }
  return out;
}

function fact(label, value) {
  return [h("dt", {}, label), h("dd", {}, value)];
}

// The log from its start to its end, with the LSO and HW marked.
function offsetBar(p) {
  const start = Math.max(0, p.log_start_offset);
  const end = Math.max(start + 1, p.log_end_offset);
  const pct = (o) => (100 * (Math.min(Math.max(o, start), end) - start)) / (end - start);
  const marks = [
    ["Log start", p.log_start_offset, "mark-start"],
    ["LSO", p.last_stable_offset, "mark-lso"],
    ["HW", p.high_watermark, "mark-hw"],
    ["LEO", p.log_end_offset, "mark-leo"],
  ];
  return h("div", { class: "offsets" },
    h("div", { class: "offset-bar" },
      h("div", { class: "offset-committed", style: `width:${pct(p.high_watermark)}%` }),
      h("div", { class: "offset-stable", style: `width:${pct(p.last_stable_offset)}%` })),
    h("div", { class: "offset-legend" }, marks.map(([label, v, cls]) =>
      h("div", { class: "offset-mark " + cls }, h("span", {}, label), h("strong", { class: "mono" }, fmtNum(v))))),
    h("p", { class: "muted small" },
      "Consumers read up to the high watermark (read_uncommitted) or the last stable offset (read_committed); records between HW and LEO wait for the in-sync replicas."));
}

function replicaTable(p) {
  return table([
    ["Broker", (r) => r.broker, { class: "num" }],
    ["Role", (r) => (r.broker === p.leader ? pill("leader", "info") : "follower")],
    ["In sync", (r) => (p.isr.includes(r.broker) ? pill("in sync", "ok") : pill("out of sync", "warn"))],
    ["LEO", (r) => fmtNum(r.log_end_offset), { class: "num" }],
    ["Behind", (r) => (r.log_end_offset < 0 ? "—" : fmtNum(p.log_end_offset - r.log_end_offset)), { class: "num" }],
  ], p.replica_log_end_offsets);
}

function segmentTable(p) {
  if (p.segments.length === 0) return empty("No segments to show", p.damaged ? "The partition is damaged." : null);
  const biggest = Math.max(1, ...p.segments.map((s) => s.size_bytes));
  return table([
    ["Base offset", (s) => fmtNum(s.base_offset), { class: "num" }],
    ["Next offset", (s) => fmtNum(s.next_offset), { class: "num" }],
    ["Records span", (s) => fmtNum(s.next_offset - s.base_offset), { class: "num" }],
    ["Size", (s) => h("div", { class: "size-cell" },
      h("div", { class: "size-bar" }, h("div", { style: `width:${(100 * s.size_bytes) / biggest}%` })),
      h("span", { class: "num" }, fmtBytes(s.size_bytes))), { class: "num" }],
    ["Newest record", (s) => fmtTime(s.max_timestamp_ms)],
    ["", (s) => (s.active ? pill("active", "info") : null)],
  ], p.segments, { testid: (s) => "segment-" + s.base_offset });
}
