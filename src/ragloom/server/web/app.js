// ragloom's search page. Plain JavaScript, no build step. Document text is only ever
// inserted with textContent (never innerHTML), so a passage cannot inject markup.
// An "ask" mode is one more handler beside runSearch: POST /v1/ask, read its event stream.
"use strict";

const $ = (id) => document.getElementById(id);

function apiHeaders(extra = {}) {
  const key = sessionStorage.getItem("ragloom-key");
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: apiHeaders(options.headers) });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    if (response.status === 401) $("key-box").hidden = false;
    const error = body.error || { code: `http_${response.status}`, message: response.statusText };
    throw Object.assign(new Error(error.message), { code: error.code });
  }
  return body;
}

function formatBytes(n) {
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

async function loadStatus() {
  try {
    const s = await api("/v1/status");
    $("status").textContent =
      `${s.sources} sources · ${s.chunks} chunks · ${s.embedder} · ${formatBytes(s.disk_bytes)}` +
      (s.jobs_pending ? ` · ${s.jobs_pending} ingest running` : "");
  } catch (error) {
    $("status").textContent = `status unavailable: ${error.message}`;
  }
}

// The passage as text nodes, with each matched span wrapped in <mark>.
function highlighted(text, spans) {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of spans) {
    if (start < at) continue;
    fragment.append(document.createTextNode(text.slice(at, start)));
    const mark = document.createElement("mark");
    mark.textContent = text.slice(start, end);
    fragment.append(mark);
    at = end;
  }
  fragment.append(document.createTextNode(text.slice(at)));
  return fragment;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function renderHit(hit) {
  const item = el("li", "hit");
  item.id = `hit-${hit.rank}`;
  item.dataset.chunkId = hit.chunk_id;
  const head = el("div", "hit-head");
  head.append(el("span", "rank", `#${hit.rank}`));
  const source = el("span", "source", hit.source.split("/").pop());
  source.title = hit.source;
  head.append(source);
  const where = [];
  if (hit.section) where.push(hit.section);
  if (hit.page !== null && hit.page !== undefined) where.push(`p. ${hit.page}`);
  where.push(`chunk ${hit.chunk_index}`);
  head.append(el("span", "where", where.join(" · ")));
  head.append(el("span", "score", `score ${hit.score.toFixed(3)}`));
  const text = el("p", "text");
  text.append(highlighted(hit.text, hit.highlights || []));
  item.append(head, text);
  return item;
}

async function runSearch(event) {
  event.preventDefault();
  const key = $("api-key").value.trim();
  if (key) sessionStorage.setItem("ragloom-key", key);
  const body = { query: $("query").value };
  if ($("mode").value) body.mode = $("mode").value;
  if ($("k").value) body.k = Number($("k").value);
  $("message").className = "message";
  $("message").textContent = "searching…";
  $("results").replaceChildren();
  try {
    const result = await api("/v1/search", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    $("results").replaceChildren(...result.hits.map(renderHit));
    const notes = result.warnings.length ? ` — ${result.warnings.join("; ")}` : "";
    $("message").textContent =
      `${result.hits.length} passages (${result.mode}, ${result.took_ms.toFixed(0)} ms)${notes}`;
  } catch (error) {
    $("message").className = "message error";
    $("message").textContent = `${error.code}: ${error.message}`;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("search-form").addEventListener("submit", runSearch);
  loadStatus();
});
