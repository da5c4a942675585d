// Messages: browse one partition from an offset or a time, shown as text,
// JSON, hex or base64, with markers, aborted and unstable records marked
// by the broker; and produce a record with headers.

import { api, enc, h, card, pill, empty, toast, errorBox, setTitle, fmtTime, fmtNum } from "./app.js";
import { keyValueRows } from "./topics.js";

const FORMATS = ["text", "json", "hex", "base64"];
const PREVIEW_CHARS = 400;

export async function show(root, r) {
  setTitle("Messages");
  const { topics } = await api("GET", "topics");
  if (topics.length === 0) {
    root.replaceChildren(card("Messages", empty("No topics yet", "Create a topic first; its records show here.")));
    return;
  }
  const state = {
    topic: r.params.get("topic") || topics[0].name,
    partition: Number(r.params.get("partition") || 0),
    from: r.params.get("offset") !== null ? "offset" : "newest",
    offset: Number(r.params.get("offset") || 0),
    time: "",
    limit: 50,
    format: localStorage.getItem("mk.format") || "text",
    page: null,
  };
  if (!topics.some((t) => t.name === state.topic)) state.topic = topics[0].name;
  const results = h("div", { "data-testid": "records" });
  const controls = h("div");
  const produce = h("div");
  const load = async (from) => {
    results.replaceChildren(h("div", { class: "loading" }, "Loading…"));
    try {
      state.page = await fetchPage(state, from);
      history.replaceState(null, "", `#/messages?topic=${enc(state.topic)}&partition=${state.partition}&offset=${state.page.start_offset}`);
      renderResults(results, state);
    } catch (e) {
      results.replaceChildren(errorBox(e));
    }
  };
  const renderAll = () => {
    const topic = topics.find((t) => t.name === state.topic);
    controls.replaceChildren(controlBar(state, topics, topic, load, renderAll));
    produce.replaceChildren(produceCard(state, topic, () => { state.from = "newest"; renderAll(); load(); }));
  };
  produce.hidden = r.params.get("produce") === null;
  const toggle = h("button", { class: "btn", type: "button", "data-testid": "produce-toggle",
    onclick: () => { produce.hidden = !produce.hidden; } }, "Produce a record");
  root.replaceChildren(card(null, h("div", { class: "controls-bar" }, controls, toggle)), produce, results);
  renderAll();
  await load();
}

async function fetchPage(state, from) {
  const base = `topics/${enc(state.topic)}/partitions/${state.partition}/records?limit=${state.limit}`;
  if (from !== undefined) return api("GET", `${base}&offset=${from}`);
  if (state.from === "offset") return api("GET", `${base}&offset=${state.offset}`);
  if (state.from === "time" && state.time) {
    return api("GET", `${base}&timestamp=${new Date(state.time).getTime()}`);
  }
  // The newest page: ask where the log ends, then read the last records.
  const end = await api("GET", `${base.replace(/limit=\d+/, "limit=0")}&offset=${Number.MAX_SAFE_INTEGER}`);
  const start = Math.max(end.log_start_offset, end.high_watermark - state.limit);
  return api("GET", `${base}&offset=${start}`);
}

function controlBar(state, topics, topic, load, rerender) {
  const select = (options, value, onchange, attrs = {}) => {
    const s = h("select", attrs, options.map(([v, label]) => h("option", { value: v, selected: String(v) === String(value) }, label)));
    s.addEventListener("change", () => onchange(s.value));
    return s;
  };
  const topicSelect = select(topics.map((t) => [t.name, t.name]), state.topic, (v) => {
    state.topic = v;
    state.partition = 0;
    rerender();
    load();
  }, { "data-testid": "browse-topic" });
  const partitionSelect = select([...Array(topic.partitions).keys()].map((p) => [p, "Partition " + p]), state.partition, (v) => {
    state.partition = Number(v);
    load();
  }, { "data-testid": "browse-partition" });
  const fromSelect = select([["newest", "Newest"], ["offset", "From offset"], ["time", "From time"]], state.from, (v) => {
    state.from = v;
    rerender();
  }, { "data-testid": "browse-from" });
  const offsetInput = h("input", { type: "number", min: "0", value: state.offset, class: "narrow", "data-testid": "browse-offset" });
  offsetInput.addEventListener("change", () => { state.offset = Number(offsetInput.value); });
  const timeInput = h("input", { type: "datetime-local", step: "1", value: state.time });
  timeInput.addEventListener("change", () => { state.time = timeInput.value; });
  const limitSelect = select([[20, "20"], [50, "50"], [100, "100"], [200, "200"]], state.limit, (v) => {
    state.limit = Number(v);
    load();
  });
  const formatSelect = select(FORMATS.map((f) => [f, f === "json" ? "JSON" : f[0].toUpperCase() + f.slice(1)]), state.format, (v) => {
    state.format = v;
    localStorage.setItem("mk.format", v);
    if (state.page) load(state.page.start_offset);
  }, { "data-testid": "browse-format" });
  return h("form", { class: "controls", onsubmit: (ev) => { ev.preventDefault(); load(); } },
    labeled("Topic", topicSelect),
    labeled("Partition", partitionSelect),
    labeled("Start", fromSelect),
    state.from === "offset" ? labeled("Offset", offsetInput) : null,
    state.from === "time" ? labeled("Time", timeInput) : null,
    labeled("Records", limitSelect),
    labeled("Show as", formatSelect),
    h("button", { class: "btn btn-primary", type: "submit", "data-testid": "browse-load" }, "Load"));
}

function labeled(label, input) {
  return h("label", { class: "field field-inline" }, h("span", {}, label), input);
}

function renderResults(root, state) {
  const p = state.page;
  const older = Math.max(p.log_start_offset, p.start_offset - state.limit);
  const nav = h("div", { class: "pager" },
    h("span", { class: "muted" }, `Offsets ${fmtNum(p.log_start_offset)} – ${fmtNum(p.high_watermark)} committed` +
      (p.last_stable_offset < p.high_watermark ? `, stable up to ${fmtNum(p.last_stable_offset)}` : "") +
      (p.log_end_offset > p.high_watermark ? `, ${fmtNum(p.log_end_offset - p.high_watermark)} waiting for replicas` : "")),
    h("span", { class: "grow" }),
    h("button", { class: "btn btn-small", disabled: p.start_offset <= p.log_start_offset, onclick: () => reload(older) }, "← Older"),
    h("button", { class: "btn btn-small", disabled: p.next_offset >= p.high_watermark, onclick: () => reload(p.next_offset) }, "Newer →"));
  function reload(offset) {
    state.from = "offset";
    state.offset = offset;
    api("GET", `topics/${enc(state.topic)}/partitions/${state.partition}/records?limit=${state.limit}&offset=${offset}`)
      .then((page) => { state.page = page; renderResults(root, state); })
      .catch((e) => root.replaceChildren(errorBox(e)));
  }
  const list = p.records.length === 0
    ? empty("No records here", p.high_watermark === p.log_start_offset ? "This partition is empty: Produce a record adds one." : "Nothing at this position; try Newest.")
    : h("div", { class: "records" }, recordHead(), p.records.map((rec) => recordRow(rec, state.format)));
  root.replaceChildren(card(`${state.topic} / partition ${state.partition}`, h("div", {}, nav, list)));
}

// ----- one record -----------------------------------------------------------

function bytesOf(b64) {
  if (b64 === null) return null;
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

// Bytes shown in `format`; returns {text, note} where note says why a
// format could not be used.
export function render(b64, format) {
  if (b64 === null) return { text: null };
  const bytes = bytesOf(b64);
  if (format === "base64") return { text: b64 };
  if (format === "hex") return { text: [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(" ") };
  const text = utf8.decode(bytes);
  if (format === "json") {
    try {
      return { text: JSON.stringify(JSON.parse(text), null, 2) };
    } catch (_) {
      return { text, note: "not JSON" };
    }
  }
  return { text };
}

function payload(b64, format, what) {
  if (b64 === null) return h("span", { class: "null" }, "null");
  const { text, note } = render(b64, format);
  const long = text.length > PREVIEW_CHARS;
  const pre = h("pre", { class: "payload" + (format === "json" && !note ? " json" : "") }, long ? text.slice(0, PREVIEW_CHARS) + "…" : text);
  const more = long ? h("button", { class: "btn btn-link", type: "button", onclick: () => {
    pre.textContent = text;
    more.remove();
  } }, `show all ${fmtNum(text.length)} characters`) : null;
  return h("div", { class: "payload-wrap", "data-testid": what }, pre, note ? h("span", { class: "note" }, note) : null, more);
}

function flags(rec) {
  const out = [];
  if (rec.control) out.push(pill(rec.control + " marker", rec.control === "ABORT" ? "bad" : "info"));
  if (rec.aborted) out.push(pill("aborted", "bad"));
  if (rec.transactional && !rec.control && !rec.aborted) out.push(pill("transactional", "neutral"));
  if (rec.beyond_lso && !rec.control) out.push(pill("not yet stable", "warn"));
  if (!rec.control && rec.value === null) out.push(pill("tombstone", "dark"));
  return out;
}

function recordRow(rec, format) {
  const headers = rec.headers.length === 0 ? h("span", { class: "null" }, "none") : h("div", { class: "headers", "data-testid": "record-headers" },
    rec.headers.map((hd) => h("span", { class: "header-chip" },
      h("span", { class: "header-key" }, hd.key),
      h("span", { class: "header-value" }, hd.value === null ? "null" : render(hd.value, format === "json" ? "text" : format).text))));
  const cls = "record" + (rec.control ? " record-control" : "") + (rec.aborted ? " record-aborted" : "");
  const meta = h("div", { class: "record-meta" },
    h("span", { class: "offset mono" }, "#" + rec.offset),
    h("span", { class: "muted mono small" }, fmtTime(rec.timestamp_ms)),
    h("div", { class: "flags" }, flags(rec)));
  if (rec.control) {
    return h("div", { class: cls, "data-testid": "record-" + rec.offset }, meta,
      h("div", { class: "record-span muted" }, rec.control === "COMMIT"
        ? `Transaction marker: producer ${rec.producer_id}'s transaction ends here, committed; consumers never see this record.`
        : `Transaction marker: producer ${rec.producer_id}'s transaction ends here, aborted; read_committed consumers skip its records.`));
  }
  return h("div", { class: cls, "data-testid": "record-" + rec.offset },
    meta,
    payload(rec.key, format, "record-key"),
    payload(rec.value, format, "record-value"),
    headers);
}

function recordHead() {
  return h("div", { class: "record record-head-row" },
    h("span", {}, "Offset / time"), h("span", {}, "Key"), h("span", {}, "Value"), h("span", {}, "Headers"));
}

// ----- produce --------------------------------------------------------------

function produceCard(state, topic, produced) {
  const partition = h("select", { "data-testid": "produce-partition" },
    h("option", { value: "" }, "Chosen by key"),
    [...Array(topic.partitions).keys()].map((p) => h("option", { value: p, selected: p === state.partition }, "Partition " + p)));
  const key = h("input", { placeholder: "optional", "data-testid": "produce-key" });
  const value = h("textarea", { rows: 4, placeholder: '{"hello": "world"}', "data-testid": "produce-value" });
  const tombstone = h("input", { type: "checkbox" });
  const headers = keyValueRows("Header", "trace-id", "abc-123");
  const error = h("div");
  const send = async (ev) => {
    ev.preventDefault();
    error.replaceChildren();
    try {
      const answer = await api("POST", `topics/${enc(state.topic)}/records`, {
        partition: partition.value === "" ? null : Number(partition.value),
        key: key.value === "" ? null : key.value,
        value: tombstone.checked ? null : value.value,
        headers: headers.pairs().filter(([k]) => k).map(([k, v]) => ({ key: k, value: v })),
      });
      toast(`Written to ${answer.topic} partition ${answer.partition} at offset ${answer.offset}`);
      state.partition = answer.partition;
      produced();
    } catch (e) {
      error.replaceChildren(errorBox(e));
    }
  };
  return h("form", { class: "card form", onsubmit: send, "data-testid": "produce-form" },
    h("div", { class: "card-head" }, h("h2", {}, `Produce to ${state.topic}`)),
    h("div", { class: "form-row" },
      h("label", { class: "field" }, h("span", {}, "Partition"), partition),
      h("label", { class: "field grow" }, h("span", {}, "Key"), key)),
    h("label", { class: "field" }, h("span", {}, "Value"), value),
    h("label", { class: "check" }, tombstone, " Send a tombstone (no value)"),
    headers.node,
    error,
    h("div", { class: "form-actions" }, h("button", { class: "btn btn-primary", type: "submit", "data-testid": "produce-send" }, "Produce")));
}
