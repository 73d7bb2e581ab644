// ragloom's search page. Plain JavaScript, no build step. Document text is only ever
// inserted with textContent (never innerHTML), so a passage cannot inject markup.
// "Ask" posts to /v1/ask and reads its event stream: the answer grows token by token, then its
// [n] citations become links to the numbered passages below it. Asking again continues the
// conversation: the earlier questions and answers go with it as history, so a follow-up such as
// "when did he die?" is searched with what came before; "New conversation" forgets them.
"use strict";

const $ = (id) => document.getElementById(id);

function apiHeaders(extra = {}) {
  const key = sessionStorage.getItem("ragloom-key");
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

// The chosen index's endpoints: /v1/indexes/NAME/... (the picker shows when the key may use several).
function indexBase() {
  const picker = $("index");
  return picker.hidden || !picker.value ? "/v1" : `/v1/indexes/${encodeURIComponent(picker.value)}`;
}

async function loadIndexes() {
  try {
    const { indexes } = await api("/v1/indexes");
    const picker = $("index");
    picker.replaceChildren(...indexes.map((ix) => {
      const option = document.createElement("option");
      option.value = ix.name;
      option.textContent = ix.name;
      option.selected = ix.default;
      return option;
    }));
    picker.hidden = indexes.length < 2;
  } catch (error) {
    $("index").hidden = true;
  }
  loadStatus();
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
    const s = await api(`${indexBase()}/status`);
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
  if (hit.chunk_index !== undefined) where.push(`chunk ${hit.chunk_index}`);
  head.append(el("span", "where", where.join(" · ")));
  head.append(el("span", "score", `score ${hit.score.toFixed(3)}`));
  const text = el("p", "text");
  text.append(highlighted(hit.text, hit.highlights || []));
  item.append(head, text);
  return item;
}

function formOptions(body) {
  const key = $("api-key").value.trim();
  if (key) sessionStorage.setItem("ragloom-key", key);
  if ($("mode").value) body.mode = $("mode").value;
  if ($("k").value) body.k = Number($("k").value);
  $("message").className = "message";
  $("results").replaceChildren();
  return body;
}

function showError(error) {
  $("message").className = "message error";
  $("message").textContent = `${error.code}: ${error.message}`;
}

async function runSearch(event) {
  event.preventDefault();
  const body = formOptions({ query: $("query").value });
  $("answer").hidden = true;
  $("message").textContent = "searching…";
  try {
    const result = await api(`${indexBase()}/search`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    $("results").replaceChildren(...result.hits.map(renderHit));
    const notes = result.warnings.length ? ` — ${result.warnings.join("; ")}` : "";
    $("message").textContent =
      `${result.hits.length} passages (${result.mode}, ${result.took_ms.toFixed(0)} ms)${notes}`;
  } catch (error) {
    showError(error);
  }
}

// Server-Sent Events from a fetch body (EventSource cannot POST): yields {event, data} objects.
async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = "message";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    // A "\r" at the end may be the first half of "\r\n": keep it for the next read.
    const end = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
    const lines = buffer.slice(0, end).split(/\r\n|\r|\n/);
    buffer = lines.pop() + buffer.slice(end);
    for (const line of lines) {
      if (line === "") {
        if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
        event = "message";
        data = [];
      } else if (line.startsWith("event:")) {
        event = line.slice(6).trim();
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      }
    }
  }
}

function focusPassage(number) {
  const target = $(`hit-${number}`);
  if (!target) return;
  for (const hit of document.querySelectorAll("#results .hit.focused")) hit.classList.remove("focused");
  target.classList.add("focused");
  target.scrollIntoView({ behavior: "smooth", block: "center" });
}

// The answer's text with each [n] that cites a passage made a link to it (text nodes only).
function withCitationLinks(text, numbers, before = null) {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    const number = Number(match[1]);
    if (!numbers.has(number)) continue;
    fragment.append(document.createTextNode(text.slice(at, match.index)));
    const link = el("a", "cite", `[${number}]`);
    link.href = `#hit-${number}`;
    link.dataset.number = String(number);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      if (before) before();
      focusPassage(number);
    });
    fragment.append(link);
    at = match.index + match[0].length;
  }
  fragment.append(document.createTextNode(text.slice(at)));
  return fragment;
}

// Earlier turns of the conversation: {question, answer}; their citations stay clickable.
const turns = [];

function history() {
  return turns.flatMap((t) => [{ role: "user", content: t.question }, { role: "assistant", content: t.answer.text }]);
}

function showTurns() {
  $("conversation").hidden = turns.length === 0;
  $("turns").replaceChildren(...turns.map((turn, index) => {
    const item = el("li", "turn");
    item.append(el("p", "turn-question", turn.question));
    const text = el("p", "turn-answer");
    const cited = new Set(turn.answer.citations.map((c) => c.number));
    text.append(withCitationLinks(turn.answer.text, cited, () => showPassages(turn.answer)));
    item.append(text);
    item.dataset.turn = String(index + 1);
    return item;
  }));
}

function newConversation() {
  turns.length = 0;
  showTurns();
  $("answer").hidden = true;
  $("results").replaceChildren();
  $("message").textContent = "new conversation";
}

function showAnswer(answer) {
  $("answer-text").classList.remove("streaming");
  $("answer-text").replaceChildren(withCitationLinks(answer.text, new Set(answer.citations.map((c) => c.number))));
  showPassages(answer);
}

function showPassages(answer) {
  const cited = new Set(answer.citations.map((c) => c.number));
  const passages = answer.context ? answer.context.passages : [];
  $("results").replaceChildren(...passages.map((p) => {
    const item = renderHit({ ...p, rank: p.number });
    item.querySelector(".rank").textContent = `[${p.number}]`;
    if (cited.has(p.number)) item.querySelector(".hit-head").append(el("span", "cited-badge", "cited"));
    return item;
  }));
  const meta = [`${answer.strategy}${answer.model ? ` · ${answer.model}` : ""}`,
    `${answer.citations.length} cited of ${passages.length} passages`, `${answer.seconds.toFixed(1)} s`];
  $("answer-meta").textContent = meta.concat(answer.warnings).join(" · ");
}

async function runAsk() {
  if (!$("search-form").reportValidity()) return;
  const question = $("query").value;
  const body = formOptions({ question, stream: true });
  if ($("strategy").value) body.strategy = $("strategy").value;
  if (turns.length) body.history = history();
  let finished = null;
  $("answer").hidden = false;
  $("answer-text").replaceChildren();
  $("answer-text").classList.add("streaming");
  $("answer-meta").textContent = "";
  $("message").textContent = "answering…";
  $("ask").disabled = true;
  try {
    const response = await fetch(`${indexBase()}/ask`, {
      method: "POST", body: JSON.stringify(body),
      headers: apiHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    });
    if (!response.ok) {
      if (response.status === 401) $("key-box").hidden = false;
      const failed = await response.json().catch(() => ({}));
      throw failed.error || { code: `http_${response.status}`, message: response.statusText };
    }
    for await (const { event, data } of serverSentEvents(response)) {
      if (event === "token") $("answer-text").append(document.createTextNode(data.text));
      else if (event === "answer") { finished = data; showAnswer(data); }
      else if (event === "error") throw data;
    }
    $("message").textContent = "";
    if (finished) {
      turns.push({ question, answer: finished });
      showTurns();
      $("query").value = "";
    }
  } catch (error) {
    $("answer-text").classList.remove("streaming");
    showError(error);
  } finally {
    $("ask").disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("search-form").addEventListener("submit", runSearch);
  $("ask").addEventListener("click", runAsk);
  $("new-conversation").addEventListener("click", newConversation);
  $("index").addEventListener("change", () => { newConversation(); loadStatus(); });
  $("api-key").addEventListener("change", () => {  // a key may see other indexes than no key
    const key = $("api-key").value.trim();
    if (key) sessionStorage.setItem("ragloom-key", key);
    loadIndexes();
  });
  loadIndexes();
});
