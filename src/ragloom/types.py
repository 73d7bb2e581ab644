"""The typed values that flow through ragloom: documents, chunks, hits, reports."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


def sha256_hex(*parts: object) -> str:
    """SHA-256 over the parts, joined by a separator that cannot occur in them."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """A unit of text a loader read from a source file.

    Most files give one document; a BEIR ``.jsonl`` corpus gives one per line.
    ``page_starts[i]`` is the character offset where page ``i + 1`` begins (PDF only), or
    slide ``i + 1`` when ``page_label`` is "slide": chunks then carry ``slide`` in metadata.
    """

    text: str
    source: str
    doc_id: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    page_starts: tuple[int, ...] = ()
    page_label: str = "page"
    #: Metadata of each page (e.g. ``ocr_confidence``), copied to the chunks that start on it.
    page_metadata: tuple[dict[str, Any], ...] = ()
    #: True when ``text`` keeps the file's line breaks where the file has them (text, Markdown,
    #: source code): chunks then carry ``start_line`` and ``end_line`` (1-based, inclusive).
    has_lines: bool = False
    #: Offsets in ``text`` where a part with metadata of its own begins (a subtitle cue: its times,
    #: its lines in the file), in order, and that metadata. A chunk takes the keys of the part it
    #: starts in, and the ``end_…`` keys of the part it ends in.
    marks: tuple[int, ...] = ()
    mark_metadata: tuple[dict[str, Any], ...] = ()

    def marks_of(self, start: int, end: int) -> dict[str, Any]:
        """The metadata the marks give a chunk of ``text[start:end]``."""
        from bisect import bisect_right

        first = max(bisect_right(self.marks, start) - 1, 0)
        last = max(bisect_right(self.marks, max(start, end - 1)) - 1, 0)
        out = {key: value for key, value in self.mark_metadata[first].items() if not key.startswith("end_")}
        out.update((key, value) for key, value in self.mark_metadata[last].items() if key.startswith("end_"))
        return out

    def page_at(self, offset: int) -> int | None:
        """1-based page holding ``offset``, or None when the document has no pages."""
        if not self.page_starts:
            return None
        page = 1
        for number, start in enumerate(self.page_starts, start=1):
            if start <= offset:
                page = number
            else:
                break
        return page


@dataclass(frozen=True)
class Chunk:
    """A bounded passage of a document, the unit that is embedded and retrieved.

    ``metadata`` always holds: source, doc_id, title, section (the header path joined
    by " > "), section_path (a list), chunk_index, start, end, token_count, and page
    for PDFs; start_line and end_line (1-based, inclusive) for text, Markdown and code
    files; language, symbol and kind for code; plus whatever the loader attached.
    """

    id: str
    text: str
    source: str
    doc_id: str
    chunk_index: int
    start: int
    end: int
    policy: str
    content_hash: str
    token_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def make_id(source: str, doc_id: str, chunk_index: int, start: int, end: int, policy: str) -> str:
        """Deterministic chunk id: SHA-256 of (source id, chunk index, offsets, policy)."""
        return sha256_hex(source, doc_id, chunk_index, start, end, policy)


#: ``Hit.scores`` keys of the two scores that mean the same for every query: the reranking
#: cross-encoder's probability that the passage is relevant, and the dense cosine similarity.
PROBABILITY = "rerank_probability"
COSINE = "dense"
RELEVANCE_KINDS = {PROBABILITY: "cross-encoder probability", COSINE: "cosine"}


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its text, where it came from, and how well it matched.

    ``score`` is the fused rank score: it orders the hits of one search (it is min–max
    normalised per query, so the best hit is often 1.0 whatever it is) and is what
    ``--explain`` traces. ``relevance`` means the same across queries; ``weak`` marks a
    hit whose relevance is below the search's threshold (``search.weak_below``).
    """

    chunk_id: str
    text: str
    score: float
    rank: int
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    #: True when ``relevance`` is below the search's weak threshold; None when not judged.
    weak: bool | None = None

    @property
    def relevance(self) -> float | None:
        """A score on the same scale for every query: the cross-encoder's probability that
        the passage answers the query when a rerank step scored it, else the dense cosine
        similarity; None when neither was computed (a lexical-only search)."""
        kind = self.relevance_kind
        return None if kind is None else self.scores[kind]

    @property
    def relevance_kind(self) -> str | None:
        """Which score ``relevance`` is: ``rerank_probability`` or ``dense`` (cosine); None if none."""
        return next((kind for kind in RELEVANCE_KINDS if kind in self.scores), None)

    @property
    def doc_id(self) -> str:
        return str(self.metadata.get("doc_id", ""))

    @property
    def section(self) -> str:
        return str(self.metadata.get("section") or "")

    @property
    def page(self) -> int | None:
        page = self.metadata.get("page")
        return int(page) if page is not None else None

    @property
    def chunk_index(self) -> int:
        return int(self.metadata.get("chunk_index", 0))

    @property
    def is_code(self) -> bool:
        """Whether the passage is source code (a code file's chunk): shown verbatim, never as Markdown."""
        return bool(self.metadata.get("language")) and "symbol" in self.metadata

    def numbered_lines(self) -> list[tuple[int | None, str]]:
        """The passage's lines, each with its number in the file; lines put before the passage's own
        (a method's class header, a later piece's signature) have None. All None without lines."""
        lines = self.text.rstrip().split("\n")
        first, last = self.start_line, self.end_line
        numbered: list[tuple[int | None, str]] = []
        for back, line in enumerate(reversed(lines)):
            number = last - back if last is not None and first is not None and last - back >= first else None
            numbered.append((number, line))
        return numbered[::-1]

    @property
    def start_line(self) -> int | None:
        """The first line of the passage in its file (1-based; text, Markdown and code files), or None."""
        line = self.metadata.get("start_line")
        return int(line) if line is not None else None

    @property
    def end_line(self) -> int | None:
        """The last line of the passage in its file (inclusive), or None."""
        line = self.metadata.get("end_line")
        return int(line) if line is not None else None

    # The specification calls a retrieved passage a Document(content, metadata, score).
    @property
    def content(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "score": self.score,
            "relevance": self.relevance,
            "relevance_kind": self.relevance_kind,
            "weak": self.weak,
            "chunk_id": self.chunk_id,
            "source": self.source,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "text": self.text,
            "metadata": self.metadata,
            "scores": self.scores,
        }


@dataclass(frozen=True)
class SourceRecord:
    """What the store remembers about one ingested file."""

    path: str
    content_hash: str
    mtime: float
    size: int
    chunk_count: int
    ingested_at: float
    loader: str = ""
    policy: str = ""

    @property
    def source(self) -> str:
        """The path, by the name hits and citations give it (``Hit.source``)."""
        return self.path


@dataclass
class FileFailure:
    path: str
    error: str


@dataclass
class IngestReport:
    """What one call to ``Index.ingest`` did."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[FileFailure] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: Why each skipped path was not read (an unsupported type, vendored, minified, generated, binary).
    skip_reasons: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0
    tokens_embedded: int = 0
    seconds: float = 0.0
    #: Of ``seconds``, the time spent in the embedder.
    embed_seconds: float = 0.0
    #: Pages (of scanned PDFs and images) whose text was read by OCR.
    ocr_pages: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed

    def skip(self, path: str, reason: str) -> None:
        """Record that ``path`` was not read, and why."""
        self.skipped.append(path)
        self.skip_reasons[path] = reason

    def skipped_files(self) -> list[dict[str, str]]:
        """Each skipped path with its reason (``--json``)."""
        return [{"path": path, "reason": self.skip_reasons.get(path, "skipped")} for path in self.skipped]

    def summary(self) -> dict[str, Any]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "removed": len(self.removed),
            "failed": len(self.failed),
            "skipped": len(self.skipped),
            "chunks_written": self.chunks_written,
            "chunks_embedded": self.chunks_embedded,
            "tokens_embedded": self.tokens_embedded,
            "seconds": round(self.seconds, 3),
            **({"ocr_pages": self.ocr_pages} if self.ocr_pages else {}),
        }


@dataclass(frozen=True)
class IndexStats:
    path: str
    sources: int
    chunks: int
    embedder: str
    dimension: int
    store: str
    disk_bytes: int
    chunking_policy: str = ""
    #: Chunks per language (their ``lang``), most first; empty where the store cannot count them.
    languages: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Citation:
    """A numbered passage an answer cites: ``[number]`` in the text points here."""

    number: int
    chunk_id: str
    source: str
    text: str
    score: float = 0.0
    section: str = ""
    page: int | None = None
    #: The retrieved passage behind it (None when rebuilt from JSON).
    hit: Hit | None = field(default=None, compare=False, repr=False)
    #: The lines of its file the passage spans (text, Markdown and code files), as in ``path:start-end``.
    start_line: int | None = None
    end_line: int | None = None

    @classmethod
    def from_hit(cls, number: int, hit: Hit, text: str | None = None) -> Citation:
        return cls(number, hit.chunk_id, hit.source, hit.text if text is None else text, hit.score,
                   hit.section, hit.page, hit, start_line=hit.start_line, end_line=hit.end_line)

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "chunk_id": self.chunk_id, "source": self.source, "text": self.text,
                "score": self.score, "section": self.section, "page": self.page,
                "start_line": self.start_line, "end_line": self.end_line}


class Citations(list[Citation]):
    """An answer's citations, ordered by number: ``for c in answer.citations`` reads them in
    order; ``answer.citations.by_number(2)`` is the one ``[2]`` in the text points to."""

    def by_number(self, number: int) -> Citation:
        """The citation numbered ``number``; a KeyError naming the numbers there are if none is."""
        for citation in self:
            if citation.number == number:
                return citation
        raise KeyError(f"the answer cites no passage [{number}]; it cites {self.numbers or 'none'}")

    @property
    def numbers(self) -> list[int]:
        """The cited numbers, in order."""
        return [c.number for c in self]


@dataclass
class AnswerSentence:
    """One sentence of an answer, the passages it cites, and whether they support it."""

    text: str
    citations: list[int] = field(default_factory=list)
    #: None: not checked; True/False: the support check's verdict.
    supported: bool | None = None
    #: The best support score among its cited passages (the checker's scale).
    support: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "citations": self.citations, "supported": self.supported,
                "support": None if self.support is None else round(self.support, 4)}


@dataclass
class AnswerStep:
    """One step of answering (retrieve, draft, verify, revise, validate...), for the trace."""

    name: str
    ms: float
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ms": round(self.ms, 3), **self.detail}


@dataclass
class Answer:
    """A generated (or extracted) answer with validated citations.

    ``citations`` holds only the passages the text cites, ordered by number (look one up with
    ``citations.by_number(n)``); ``context`` is the numbered context the strategy was given
    (a ``ragloom.context.Context``).
    """

    question: str
    text: str
    strategy: str
    citations: Citations = field(default_factory=Citations)
    sentences: list[AnswerSentence] = field(default_factory=list)
    context: Any = None
    model: str = ""
    #: prompt, completion and context token counts (the LLM's, or the embedder's for extractive).
    tokens: dict[str, int] = field(default_factory=dict)
    trace: list[AnswerStep] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unsupported(self) -> list[AnswerSentence]:
        """Sentences the support check found no cited passage for."""
        return [s for s in self.sentences if s.supported is False]

    def __post_init__(self) -> None:
        # Whatever a strategy passes (a list, a mapping of number to citation), kept ordered by number.
        cited = self.citations.values() if isinstance(self.citations, dict) else self.citations
        self.citations = Citations(sorted(cited, key=lambda c: c.number))

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "text": self.text,
            "strategy": self.strategy,
            "model": self.model,
            "citations": [c.to_dict() for c in self.citations],
            "sentences": [s.to_dict() for s in self.sentences],
            "unsupported": [s.text for s in self.unsupported],
            "tokens": dict(self.tokens),
            "context": self.context.to_dict() if hasattr(self.context, "to_dict") else None,
            "trace": [step.to_dict() for step in self.trace],
            "warnings": list(self.warnings),
            "seconds": round(self.seconds, 3),
        }
