// ragloom's search page. Plain JavaScript, no build step. Passages and answers are Markdown:
// rendered by the vendored marked, then cleaned by the vendored DOMPurify with an allow-list
// (no scripts, styles, forms, frames, event handlers or images), before they reach the page.
// "Ask" posts to /v1/ask and reads its event stream: the numbered sources first, then the answer
// token by token, then the finished answer, whose [n] citations link to the passages below it.
// Asking again continues the conversation ("New conversation" forgets it). The address bar
// holds the query (?q=...&do=ask), so a reload or a shared link shows the same thing.
"use strict";

const $ = (id) => document.getElementById(id);

// -- talking to the server ---------------------------------------------------------------------

function apiHeaders(extra = {}) {
  const key = sessionStorage.getItem("ragloom-key");
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

// The chosen index's endpoints: /v1/indexes/NAME/... (the picker shows when the key may use several).
function indexBase() {
  const picker = $("index");
  return picker.hidden || !picker.value ? "/v1" : `/v1/indexes/${encodeURIComponent(picker.value)}`;
}

// What the caller's key may do (GET /v1/indexes): the server's own file paths are shown to admins only.
let callerScope = "read";
// The index the address names (?index=), chosen once the picker knows the caller's indexes.
let wantedIndex = null;

async function loadIndexes() {
  try {
    const { indexes, scope } = await api("/v1/indexes");
    callerScope = scope || "read";
    const picker = $("index");
    const wanted = indexes.some((ix) => ix.name === wantedIndex) ? wantedIndex : null;
    picker.replaceChildren(...indexes.map((ix) => {
      const option = document.createElement("option");
      option.value = ix.name;
      option.textContent = ix.name;
      option.selected = wanted ? ix.name === wanted : ix.default;
      return option;
    }));
    picker.hidden = indexes.length < 2;
  } catch (error) {
    $("index").hidden = true;
  }
  loadStatus();
  loadRemote();
  loadStrategies();
}

// fetch, with a network failure (server gone) turned into an error the page can explain.
async function request(path, options = {}) {
  try {
    const response = await fetch(path, { ...options, headers: apiHeaders(options.headers) });
    $("offline").hidden = true;
    return response;
  } catch (cause) {
    throw Object.assign(new Error("the server is not answering"), { code: "offline", cause });
  }
}

async function failure(response) {
  if (response.status === 401) $("key-box").hidden = false;
  const body = await response.json().catch(() => ({}));
  const error = body.error || { code: `http_${response.status}`, message: response.statusText || "request failed" };
  return Object.assign(new Error(error.message), { code: error.code });
}

async function api(path, options = {}) {
  const response = await request(path, options);
  if (!response.ok) throw await failure(response);
  return response.json();
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
    if (error.code === "offline") showError(error);
    else $("status").textContent = `status unavailable: ${error.message}`;
  }
}

// Remote sources (GET /v1/remote-sources): each one's last sync, how old the index's copy is, its error.
function ago(seconds) {
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size) return `${Math.round(seconds / size)} ${unit}`;
  }
  return `${Math.round(seconds)} s`;
}

async function loadRemote() {
  let rows = [];
  try { rows = await api(`${indexBase()}/remote-sources`); } catch (error) { rows = []; }
  const body = $("remote-rows");
  body.replaceChildren();
  for (const row of rows) {
    const tr = el("tr", `remote-${row.status}`);
    const finished = row.last_finished ? `${ago(Date.now() / 1000 - row.last_finished)} ago` : "never";
    const counts = row.report && row.report.seen !== undefined
      ? `${row.report.seen} seen · +${row.report.added} ~${row.report.updated} −${row.report.removed}` +
        (row.report.failed ? ` · ${row.report.failed} failed` : "")
      : "";
    for (const text of [row.name, row.status, finished,
      row.cursor_age_seconds === null ? "–" : ago(row.cursor_age_seconds), counts, row.error || ""]) {
      tr.append(el("td", "", text));
    }
    tr.title = row.uri;
    body.append(tr);
  }
  $("remote").hidden = rows.length === 0;
}

// The strategy menu offers what this server can run (GET /v1/models), and says why when that
// is only the extractive strategy.
async function loadStrategies() {
  let names;
  try {
    names = (await api(`${indexBase()}/models`)).data.map((m) => m.id).filter((id) => id !== "ragloom");
  } catch (error) {
    return;
  }
  const menu = $("strategy");
  const chosen = menu.value;
  const options = [["", "answer: default"], ...names.map((n) => [n, n === "extractive" ? "extractive (no LLM)" : n])];
  const llmLess = names.length === 1 && names[0] === "extractive";
  menu.replaceChildren(...(llmLess ? [["extractive", "answer: extractive"]] : options).map(([value, label]) => {
    const option = el("option", "", label);
    option.value = value;
    return option;
  }));
  $("strategy-note").hidden = !llmLess;
  $("strategy-note").textContent = llmLess
    ? "This server has no LLM, so answers quote the best sentences of the passages (extractive). " +
      "Configure llm in the server's ragloom.yaml to write answers with standard, attributed or cove."
    : "";
  if (names.includes(chosen)) menu.value = chosen;  // what was picked (or linked) before the menu was built
}

// -- rendering -----------------------------------------------------------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const ALLOWED_TAGS = ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i", "u", "s", "del",
  "code", "pre", "kbd", "sub", "sup", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
  "span", "div", "dl", "dt", "dd", "details", "summary", "mark"];
// A heading's attribute list ({ #id }, {#id .class}) names it; it is not part of its title.
const HEADING_ATTRIBUTES = /^( {0,3}#{1,6}[ \t].*?)[ \t]*\{:?[ \t]*[#.][^}\n]*\}[ \t]*$/gm;
// And a link's ([text](url){.internal-link target=_blank}), as MkDocs and kramdown write it.
const LINK_ATTRIBUTES = /([)\]])\{:?[ \t]*[#.][^{}\n]*\}/g;
let purifierReady = false;
let markdown = null;

function setUpPurifier() {
  if (purifierReady) return;
  // A remote image would tell its server who reads what: it shows as its description instead.
  markdown = new window.marked.Marked({ gfm: true, breaks: false,
    renderer: { image: ({ text: alt }) => escapeHtml(alt || "") } });
  window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    // Classes kept: a fenced block's language (```python), which says how to colour it, and
    // highlight.js's own on the spans it makes (hljs-keyword, "hljs-title function_").
    const classes = (node.getAttribute("class") || "").split(/\s+/).filter(Boolean);
    const kept = node.tagName === "CODE" ? classes.every((c) => /^language-[\w+#-]+$/.test(c))
      : node.tagName === "SPAN" && classes.every((c) => /^(hljs-[\w-]+|[\w-]+_)$/.test(c));
    if (node.hasAttribute("class") && !kept) node.removeAttribute("class");
    if (node.tagName !== "A") return;
    const href = node.getAttribute("href") || "";
    if (!/^(https?:|mailto:)/i.test(href)) node.removeAttribute("href");
    node.setAttribute("rel", "noopener noreferrer nofollow");
    node.setAttribute("target", "_blank");
  });
  purifierReady = true;
}

// Markdown (and the HTML in it) as a sanitised fragment; plain text if the renderer is missing.
function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  if (!window.marked || !window.DOMPurify) {
    fragment.append(el("p", "", text));
    return fragment;
  }
  setUpPurifier();
  const html = markdown.parse(text.replace(HEADING_ATTRIBUTES, "$1").replace(LINK_ATTRIBUTES, "$1"));
  const clean = window.DOMPurify.sanitize(html, {
    ALLOWED_TAGS, ALLOWED_ATTR: ["href", "title", "colspan", "rowspan", "align", "class"], RETURN_DOM_FRAGMENT: true,
  });
  fragment.append(clean);
  return fragment;
}

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// Text nodes of `root` outside links and code, for marking words and linking citations.
function textNodes(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement.closest("a, code, pre") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  return nodes;
}

// Replace the matches of `pattern` in the text of `root` by what `make(match)` builds (or null: keep).
function replaceInText(root, pattern, make) {
  for (const node of textNodes(root)) {
    const text = node.textContent;
    const fragment = document.createDocumentFragment();
    let at = 0;
    for (const match of text.matchAll(pattern)) {
      const made = make(match);
      if (!made) continue;
      fragment.append(document.createTextNode(text.slice(at, match.index)), made);
      at = match.index + match[0].length;
    }
    if (at === 0) continue;
    fragment.append(document.createTextNode(text.slice(at)));
    node.replaceWith(fragment);
  }
}

// The words the server found matching (character spans of the raw passage), marked in the rendered one.
function markWords(root, text, spans) {
  const words = new Set((spans || []).map(([start, end]) => text.slice(start, end).toLowerCase()));
  if (!words.size) return;
  replaceInText(root, /[\p{L}\p{N}]+/gu, (match) => (words.has(match[0].toLowerCase()) ? el("mark", "", match[0]) : null));
}

// -- code: shown verbatim, never as Markdown ------------------------------------------------------

// The language of a code passage (a hit's metadata, or a passage's own field); "" for prose.
function codeLanguage(hit) {
  const metadata = hit.metadata || {};
  return (metadata.language && "symbol" in metadata ? metadata.language : hit.language) || "";
}

// highlight.js's name for each of the languages the code chunker reads (the rest are the same).
const HIGHLIGHT_NAMES = { tsx: "typescript", csharp: "csharp", cpp: "cpp", bash: "bash" };

// The passage's lines, each with its number in the file (null for a class header or signature put before it).
function numberedLines(hit) {
  const lines = hit.text.replace(/\s+$/, "").split("\n");
  const first = hit.start_line, last = hit.end_line;
  return lines.map((line, i) => {
    const number = last - (lines.length - 1 - i);
    return [first && last && number >= first ? number : null, line];
  });
}

// Lines (indexes) holding a span the server found matching the query.
function matchedLines(text, spans) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  const found = new Set();
  for (const [start] of spans || []) {
    let line = 0;
    while (line + 1 < starts.length && starts[line + 1] <= start) line += 1;
    found.add(line);
  }
  return found;
}

// Code text as highlighted HTML: highlight.js escapes the text; the result is still sanitised to spans.
function highlighted(text, language) {
  const name = HIGHLIGHT_NAMES[language] || language;
  if (!window.hljs || !window.DOMPurify || !window.hljs.getLanguage(name)) return null;
  const html = window.hljs.highlight(text, { language: name, ignoreIllegals: true }).value;
  return window.DOMPurify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true });
}

// A code passage in <pre><code>: line numbers in a gutter, the code as written, coloured in place.
function renderCode(hit) {
  const rows = numberedLines(hit);
  const matched = matchedLines(hit.text, hit.highlights);
  const box = el("div", "code-box");
  const gutter = el("pre", "gutter");
  gutter.setAttribute("aria-hidden", "true");
  rows.forEach(([number], i) => {
    gutter.append(el("span", matched.has(i) ? "line-number matched" : "line-number", number === null ? "" : String(number)), "\n");
  });
  const code = el("code", `hljs language-${codeLanguage(hit)}`);
  const text = rows.map(([, line]) => line).join("\n");
  const coloured = highlighted(text, codeLanguage(hit));
  if (coloured) code.append(coloured);
  else code.textContent = text;
  const pre = el("pre", "code");
  pre.append(code);
  box.append(gutter, pre);
  return box;
}

// Fenced code in rendered Markdown (a passage, an answer's quoted code) coloured the same way.
function highlightBlocks(root) {
  for (const block of root.querySelectorAll("pre code")) {
    const language = ([...block.classList].find((c) => c.startsWith("language-")) || "").slice(9);
    const coloured = language && highlighted(block.textContent, language);
    if (coloured) {
      block.replaceChildren(coloured);
      block.classList.add("hljs");
    }
  }
}

function renderHit(hit) {
  const item = el("li", "hit");
  item.id = `hit-${hit.rank}`;
  item.dataset.chunkId = hit.chunk_id;
  const head = el("div", "hit-head");
  head.append(el("span", "rank", `#${hit.rank}`));
  const code = codeLanguage(hit);
  const path = hit.display_path || hit.source.split("/").pop();
  // path:line, as an editor opens it; a click opens the viewer there.
  const source = el("button", "source", code && hit.start_line ? `${path}:${hit.start_line}` : path);
  source.type = "button";
  source.title = `${hit.source} — open it at this passage`;
  source.addEventListener("click", () => openSource(hit));
  head.append(source);
  // A remote item opens where it lives: a page at its URL, a file of a commit on its forge at its line.
  const metadata = hit.metadata || {};
  const link = metadata.link ? metadata.link + (hit.start_line ? `#L${hit.start_line}` : "")
    : /^https?:\/\//.test(hit.source) ? hit.source : null;
  if (link) {
    const anchor = el("a", "origin", "open ↗");
    anchor.href = link;
    anchor.target = "_blank";
    anchor.rel = "noopener noreferrer";
    head.append(anchor);
  }
  const where = [];
  // A code hit's section is its qualified symbol, shown as written (ProgressBar.__repr__).
  if (hit.section) where.push(code ? hit.section : hit.section.replaceAll(" > ", " › ").replace(/`+|\*\*|__/g, ""));
  if (hit.page !== null && hit.page !== undefined) where.push(`p. ${hit.page}`);
  if (hit.start_line) where.push(hit.end_line && hit.end_line !== hit.start_line ? `lines ${hit.start_line}–${hit.end_line}` : `line ${hit.start_line}`);
  if (hit.chunk_index !== undefined) where.push(`chunk ${hit.chunk_index}`);
  head.append(el("span", "where", where.join(" · ")));
  head.append(scoreOf(hit));
  if (hit.weak) head.append(el("span", "weak", "weak match"));
  if (code) {
    const text = el("div", "text");
    text.append(renderCode(hit));
    item.append(head, text);
    return item;
  }
  const text = el("div", "text md");
  text.append(renderMarkdown(hit.text));
  highlightBlocks(text);
  markWords(text, hit.text, hit.highlights);
  item.append(head, text);
  return item;
}

// The relevance that means the same across queries (the dense cosine, or the cross-encoder's
// probability when reranked), named; else the fused rank score, which only orders the hits.
const RELEVANCE = { dense: ["cos", "the dense cosine similarity"], rerank_probability: ["p", "the cross-encoder's probability"] };

function scoreOf(hit) {
  const kind = RELEVANCE[hit.relevance_kind];
  if (!kind || hit.relevance === null || hit.relevance === undefined) {
    return Object.assign(el("span", "score", `score ${hit.score.toFixed(3)}`), { title: "rank score: orders the hits of this query" });
  }
  const span = el("span", "score", `${kind[0]} ${hit.relevance.toFixed(2)}`);
  span.title = `${kind[1]}: means the same across queries (rank score ${hit.score.toFixed(3)})`;
  return span;
}

// -- the source viewer ---------------------------------------------------------------------------

async function openSource(hit) {
  const viewer = $("viewer");
  const line = hit.start_line ? `:${hit.start_line}` : "";
  $("viewer-title").textContent = (hit.display_path || hit.source) + line;
  const where = [hit.section, hit.page ? `page ${hit.page}` : ""].filter(Boolean).join(" · ");
  $("viewer-path").textContent = callerScope === "admin" ? hit.source : where;
  $("viewer-text").replaceChildren(el("span", "", "loading…"));
  if (!viewer.open) viewer.showModal();
  try {
    const view = await api(`${indexBase()}/sources/${encodeURIComponent(hit.source_id)}/text`);
    const chunk = view.chunks.find((c) => c.chunk_id === hit.chunk_id);
    const body = $("viewer-text");
    if (!chunk) {
      body.replaceChildren(document.createTextNode(view.text));
      return;
    }
    const mark = el("mark", "cited-passage", view.text.slice(chunk.start, chunk.end));
    mark.id = "viewer-target";
    body.replaceChildren(document.createTextNode(view.text.slice(0, chunk.start)), mark,
      document.createTextNode(view.text.slice(chunk.end)));
    mark.scrollIntoView({ block: "center" });
  } catch (error) {
    $("viewer-text").replaceChildren(el("span", "error", messageOf(error)));
  }
}

// -- states: messages, errors, the address bar ------------------------------------------------

function messageOf(error) {
  if (error.code === "offline") return "The ragloom server is not answering.";
  return error.code ? `${error.code}: ${error.message}` : String(error.message || error);
}

function showError(error) {
  if (error.code === "offline") {
    $("offline").hidden = false;
    $("message").className = "message";
    $("message").textContent = "";
    if (!$("answer-text").textContent.trim()) $("answer").hidden = true;
    return;
  }
  $("message").className = "message error";
  $("message").textContent = messageOf(error);
}

let lastRun = null;

function remember(kind) {
  const params = new URLSearchParams({ q: $("query").value });
  if (kind === "ask") params.set("do", "ask");
  if ($("mode").value) params.set("mode", $("mode").value);
  if ($("strategy").value && kind === "ask") params.set("strategy", $("strategy").value);
  if ($("k").value && $("k").value !== "5") params.set("k", $("k").value);
  if (!$("index").hidden && $("index").value) params.set("index", $("index").value);
  history.replaceState(null, "", `${location.pathname}?${params}`);
}

function setKind(kind) {
  for (const [id, active] of [["go", kind === "search"], ["ask", kind === "ask"]]) {
    $(id).classList.toggle("secondary", !active);
    $(id).setAttribute("aria-pressed", String(active));
  }
  currentKind = kind;
}

let currentKind = "search";

function formOptions(body) {
  const key = $("api-key").value.trim();
  if (key) sessionStorage.setItem("ragloom-key", key);
  if ($("mode").value) body.mode = $("mode").value;
  if ($("k").value) body.k = Number($("k").value);
  $("message").className = "message";
  $("offline").hidden = true;
  $("results").replaceChildren();
  return body;
}

// -- search --------------------------------------------------------------------------------------

async function runSearch() {
  if (!$("search-form").reportValidity()) return;
  setKind("search");
  lastRun = runSearch;
  remember("search");
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

// -- ask -----------------------------------------------------------------------------------------

// Server-Sent Events from a fetch body (EventSource cannot POST): yields {event, data} objects.
async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = "message";
  let data = [];
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (cause) {
      throw Object.assign(new Error("the server stopped while answering"), { code: "offline", cause });
    }
    const { value, done } = chunk;
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

// The answer rendered, with each [n] that cites a passage made a link to it.
function answerWithLinks(text, numbers, before = null) {
  const holder = el("div");
  holder.append(renderMarkdown(text));
  highlightBlocks(holder);  // code an extractive answer quotes, as a fenced block
  replaceInText(holder, /\[(\d+)\]/g, (match) => {
    const number = Number(match[1]);
    if (!numbers.has(number)) return null;
    const link = el("a", "cite", `[${number}]`);
    link.href = `#hit-${number}`;
    link.dataset.number = String(number);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      if (before) before();
      focusPassage(number);
    });
    return link;
  });
  const fragment = document.createDocumentFragment();
  fragment.append(...holder.childNodes);
  return fragment;
}

// Earlier turns of the conversation: {question, answer}; their citations stay clickable.
const turns = [];

function conversationHistory() {
  return turns.flatMap((t) => [{ role: "user", content: t.question }, { role: "assistant", content: t.answer.text }]);
}

// The answer box shows the latest answer; the conversation above it, the turns before that one,
// so that no answer is shown twice.
function showTurns() {
  const earlier = turns.slice(0, -1);
  $("conversation").hidden = earlier.length === 0;
  $("new-conversation").hidden = turns.length === 0;
  $("turns").replaceChildren(...earlier.map((turn, index) => {
    const item = el("li", "turn");
    item.append(el("p", "turn-question", turn.question));
    const text = el("div", "turn-answer md");
    const cited = new Set(turn.answer.citations.map((c) => c.number));
    text.append(answerWithLinks(turn.answer.text, cited, () => showPassages(turn.answer)));
    item.append(text, el("p", "answer-meta", answerMeta(turn.answer)));
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
  $("answer-text").replaceChildren(answerWithLinks(answer.text, new Set(answer.citations.map((c) => c.number))));
  showPassages(answer);
}

function renderPassages(passages, cited = new Set()) {
  $("results").replaceChildren(...passages.map((p) => {
    const item = renderHit({ ...p, rank: p.number });
    item.querySelector(".rank").textContent = `[${p.number}]`;
    if (cited.has(p.number)) item.querySelector(".hit-head").append(el("span", "cited-badge", "cited"));
    return item;
  }));
}

function showPassages(answer) {
  const cited = new Set(answer.citations.map((c) => c.number));
  const passages = answer.context ? answer.context.passages : [];
  renderPassages(passages, cited);
  $("answer-meta").textContent = answerMeta(answer);
}

function answerMeta(answer) {
  const passages = answer.context ? answer.context.passages : [];
  const meta = [`${answer.strategy}${answer.model ? ` · ${answer.model}` : ""}`,
    `${answer.citations.length} cited of ${passages.length} passages`, `${answer.seconds.toFixed(1)} s`];
  return meta.concat(answer.warnings).join(" · ");
}

async function runAsk() {
  if (!$("search-form").reportValidity()) return;
  setKind("ask");
  lastRun = runAsk;
  remember("ask");
  const question = $("query").value;
  const body = formOptions({ question, stream: true });
  if ($("strategy").value) body.strategy = $("strategy").value;
  if (turns.length) body.history = conversationHistory();
  let finished = null;
  $("answer").hidden = false;
  $("answer-text").replaceChildren();
  $("answer-text").classList.add("streaming");
  $("answer-meta").textContent = "";
  $("message").textContent = "answering…";
  $("ask").disabled = true;
  try {
    const response = await request(`${indexBase()}/ask`, {
      method: "POST", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    });
    if (!response.ok) throw await failure(response);
    for await (const { event, data } of serverSentEvents(response)) {
      if (event === "sources") renderPassages(data.passages);
      else if (event === "token") $("answer-text").append(document.createTextNode(data.text));
      else if (event === "answer") { finished = data; showAnswer(data); }
      else if (event === "error") throw Object.assign(new Error(data.message), { code: data.code });
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

// -- start ---------------------------------------------------------------------------------------

// A link with ?q= (and do=ask, mode, strategy, k) runs that query when the page opens.
function restoreFromAddress(params) {
  const query = params.get("q");
  if (params.get("index") && [...$("index").options].some((o) => o.value === params.get("index"))) {
    $("index").value = params.get("index");
  }
  if (params.get("mode")) $("mode").value = params.get("mode");
  const strategy = params.get("strategy");
  if (strategy && ![...$("strategy").options].some((o) => o.value === strategy)) {
    $("strategy").append(Object.assign(el("option", "", strategy), { value: strategy }));  // until the menu loads
  }
  if (strategy) $("strategy").value = strategy;
  if (params.get("k")) $("k").value = params.get("k");
  setKind(params.get("do") === "ask" ? "ask" : "search");
  if (!query) return;
  $("query").value = query;
  if (currentKind === "ask") runAsk();
  else runSearch();
}

document.addEventListener("DOMContentLoaded", () => {
  const linked = new URLSearchParams(location.search);  // read now: a search updates the address
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();  // Enter runs what the page is doing: a search, or a question
    if (currentKind === "ask") runAsk();
    else runSearch();
  });
  $("go").addEventListener("click", runSearch);
  $("ask").addEventListener("click", runAsk);
  $("new-conversation").addEventListener("click", newConversation);
  $("viewer-close").addEventListener("click", () => $("viewer").close());
  $("retry").addEventListener("click", () => {
    $("offline").hidden = true;
    loadIndexes();
    if (lastRun) lastRun();
  });
  $("index").addEventListener("change", () => {
    newConversation(); loadStatus(); loadStrategies(); loadRemote();
    if ($("query").value) remember(currentKind);  // the address names the index chosen
  });
  $("api-key").addEventListener("change", () => {  // a key may see other indexes than no key
    const key = $("api-key").value.trim();
    if (key) sessionStorage.setItem("ragloom-key", key);
    loadIndexes();
  });
  wantedIndex = linked.get("index");
  loadIndexes().then(() => restoreFromAddress(linked));  // the picker first: the address may name an index
});
