// The console's shell: the API client, small DOM and formatting helpers
// every view shares, the hash router, the health badge and the overview
// sampler that keeps the plots' history while other views are open.

import * as overview from "./overview.js";
import * as topics from "./topics.js";
import * as messages from "./messages.js";
import * as groups from "./groups.js";
import * as transactions from "./transactions.js";

// ----- API ----------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch("/api/" + path, init);
  } catch (e) {
    throw new ApiError(0, "UNREACHABLE", "The broker does not answer: " + e.message);
  }
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch (_) {
    throw new ApiError(response.status, "BAD_ANSWER", text.slice(0, 200));
  }
  if (!response.ok) {
    const err = (json && json.error) || {};
    throw new ApiError(response.status, err.code || "ERROR", err.message || response.statusText);
  }
  return json;
}

export const enc = encodeURIComponent;

// ----- DOM helpers --------------------------------------------------------

// h("div", {class: "x", onclick: f}, "text", child, [more children])
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else if (k === "value") node.value = v;
    // Through the CSSOM: the page's CSP allows no inline style attributes.
    else if (k === "style") node.style.cssText = v;
    else if (v === true) node.setAttribute(k, "");
    else node.setAttribute(k, v);
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function pill(text, kind) {
  return h("span", { class: "pill pill-" + (kind || "neutral") }, text);
}

export function card(title, body, extra) {
  return h("section", { class: "card" },
    title ? h("div", { class: "card-head" }, h("h2", {}, title), extra || null) : null,
    body);
}

export function empty(title, hint) {
  return h("div", { class: "empty" }, h("div", { class: "empty-title" }, title),
    hint ? h("div", { class: "empty-hint" }, hint) : null);
}

// A table: columns are [header, (row) => cell, {class}] triples.
export function table(columns, rows, opts = {}) {
  const head = h("tr", {}, columns.map(([title, , o]) => h("th", { class: (o && o.class) || null }, title)));
  const body = rows.map((row) => {
    const tr = h("tr", { class: opts.rowClass ? opts.rowClass(row) : null },
      columns.map(([, cell, o]) => h("td", { class: (o && o.class) || null }, cell(row))));
    if (opts.onclick) {
      tr.classList.add("clickable");
      tr.addEventListener("click", () => opts.onclick(row));
    }
    if (opts.testid) tr.setAttribute("data-testid", opts.testid(row));
    return tr;
  });
  return h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, head), h("tbody", {}, body)));
}

export function toast(message, kind) {
  const t = document.getElementById("toast");
  t.textContent = message;
  t.className = "toast toast-" + (kind || "ok");
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 4000);
}

export function errorBox(e) {
  return h("div", { class: "error-box", role: "alert" },
    h("strong", {}, e.code || "Error"), " ", e.message || String(e));
}

// ----- formatting ---------------------------------------------------------

export function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(v < 10 ? 2 : 1)) + " " + units[i];
}

export function fmtNum(n) {
  if (n === null || n === undefined || n < 0) return "—";
  return Number(n).toLocaleString("en-US");
}

// "1 topic", "3 topics".
export function plural(n, word) {
  return `${fmtNum(n)} ${word}${n === 1 ? "" : "s"}`;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return "—";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + (s % 60) + " s";
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return hrs + " h " + (m % 60) + " min";
  return Math.floor(hrs / 24) + " d " + (hrs % 24) + " h";
}

export function fmtTime(ms) {
  if (ms === null || ms === undefined || ms < 0) return "—";
  const d = new Date(ms);
  const pad = (x, n = 2) => String(x).padStart(n, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function healthPill(health, underReplicated) {
  if (health === "damaged") return pill("damaged", "bad");
  if (health === "offline") return pill("offline", "bad");
  if (underReplicated) return pill("under-replicated", "warn");
  return pill("online", "ok");
}

// ----- the overview sampler -----------------------------------------------

// Samples /api/overview every two seconds whatever view is open, so the
// overview's plots have a history; views subscribe to each sample.
const SAMPLE_MS = 2000;
const HISTORY = 300; // 10 minutes
export const samples = [];
const listeners = new Set();

export function onSample(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}

async function sample() {
  try {
    const o = await api("GET", "overview");
    o.sampled_at = Date.now() / 1000;
    samples.push(o);
    if (samples.length > HISTORY) samples.shift();
    showHealth(o);
    setBanner(null);
    for (const f of listeners) f(o);
  } catch (e) {
    setBanner("Cannot reach the broker: " + e.message);
    document.getElementById("health").replaceWith(
      Object.assign(pill("unreachable", "bad"), { id: "health" }));
  }
}

function showHealth(o) {
  const p = o.partitions;
  const offlineBrokers = o.brokers.filter((b) => !b.online).length;
  let text = "Healthy";
  let kind = "ok";
  if (o.disk_full) { text = "Disk full"; kind = "bad"; }
  else if (p.damaged > 0) { text = `${p.damaged} damaged partition${p.damaged > 1 ? "s" : ""}`; kind = "bad"; }
  else if (p.offline > 0) { text = `${p.offline} offline partition${p.offline > 1 ? "s" : ""}`; kind = "bad"; }
  else if (offlineBrokers > 0 || p.under_replicated > 0) { text = "Degraded"; kind = "warn"; }
  const badge = Object.assign(pill(text, kind), { id: "health", title: "Cluster health" });
  badge.setAttribute("data-testid", "health");
  document.getElementById("health").replaceWith(badge);
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  document.getElementById("cluster-id").textContent = "cluster " + o.cluster_id;
}

function setBanner(message) {
  const b = document.getElementById("banner");
  b.hidden = !message;
  b.textContent = message || "";
}

// ----- routing --------------------------------------------------------------

const views = { overview, topics, messages, groups, transactions };
let current = null;

// "#/topics/orders?x=1" -> {view: "topics", parts: ["orders"], params}
export function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] || "overview", parts: parts.slice(1), params: new URLSearchParams(query || "") };
}

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

export function setTitle(text) {
  document.getElementById("title").textContent = text;
  document.title = text + " · MiniKafka console";
}

async function route() {
  const r = parseHash();
  const view = views[r.view] || overview;
  if (current && current.leave) current.leave();
  current = view;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.view === r.view);
  }
  const root = document.getElementById("view");
  root.replaceChildren(h("div", { class: "loading" }, "Loading…"));
  try {
    await view.show(root, r);
  } catch (e) {
    root.replaceChildren(errorBox(e));
  }
}

window.addEventListener("hashchange", route);
route();
sample();
setInterval(sample, SAMPLE_MS);
