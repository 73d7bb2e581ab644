"""The chunker interface.

A chunker implements ``split(document) -> list[Span]``: character ranges of the
document text, each with the section path it belongs to. Everything else (ids, content
hashes, token counts, page numbers, metadata) is derived here, the same for every
strategy.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import replace
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...config import ChunkingConfig
from ...types import Chunk, Document, content_hash
from ._tokens import Span, TokenCounter, TokenMeter, TokenOffsets  # noqa: F401 - the chunker interface's types

if TYPE_CHECKING:
    from pydantic import BaseModel


class Chunker(ABC):
    #: Registry name.
    name: str = ""
    #: Bump when the splitting rules change, so chunk ids change with them.
    version: str = "1"
    #: The component's settings, declared once: a pydantic model that checks its sub-section of the
    #: config (``chunking.<name>``) when it is resolved; a plugin reads them with ``self.config.options()``.
    Options: ClassVar[type[BaseModel] | None] = None

    def __init__(
        self,
        config: ChunkingConfig,
        count_tokens: TokenCounter,
        token_offsets: TokenOffsets | None = None,
        max_tokens: int | None = None,
    ) -> None:
        """``max_tokens``: the most the embedder reads of one text; longer chunks are cut (None: no limit)."""
        self.config = config
        self.count_tokens = count_tokens
        self.token_offsets = token_offsets
        self.max_tokens = max_tokens

    @property
    def policy(self) -> str:
        """Identifies the splitting rules and their parameters; part of every chunk id."""
        c = self.config
        fit = f"/fit={self.max_tokens}" if self.max_tokens is not None else ""
        return f"{self.name}/v{self.version}/size={c.chunk_size}/overlap={c.chunk_overlap}{fit}"

    @abstractmethod
    def split(self, document: Document) -> list[Span]:
        """Character spans of ``document.text``, in order, that become chunks."""

    def spans(self, document: Document) -> list[Span]:
        """``split`` applied page by page, so that no chunk straddles two pages."""
        if len(document.page_starts) < 2:
            return self.split(document)
        spans: list[Span] = []
        bounds = [*document.page_starts, len(document.text)]
        for start, end in zip(bounds, bounds[1:]):
            page = replace(document, text=document.text[start:end], page_starts=())
            spans.extend(
                replace(span, start=span.start + start, end=span.end + start) for span in self.split(page)
            )
        return spans

    def meter(self, document: Document) -> TokenMeter:
        """The token meter of ``document.text``, measured once however many steps ask for it."""
        meter = self._meter
        if meter is None or meter.text is not document.text:
            meter = self._meter = TokenMeter(document.text, self.count_tokens, self.token_offsets)
        return meter

    _meter: TokenMeter | None = None

    def fitted_spans(self, document: Document) -> list[tuple[Span, str, int]]:
        """Each span with its text and token count, a span the embedder could not read whole cut
        into pieces that it can (``_fit``)."""
        from ._fit import fit_spans, piece_text

        out: list[tuple[Span, str, int]] = []
        meter = self.meter(document)
        for span in self.spans(document):
            text = piece_text(document.text, span)
            tokens = self._tokens(meter, span)
            if self.max_tokens is None or tokens <= self.max_tokens:
                out.append((span, text, tokens))
                continue
            for piece in fit_spans(meter, span, self.max_tokens, self.count_tokens):
                out.append((piece, piece_text(document.text, piece), self._tokens(meter, piece)))
        return out

    def _tokens(self, meter: TokenMeter, span: Span) -> int:
        return meter.count(span.start, span.end) + (self.count_tokens(span.prefix) if span.prefix else 0)

    #: Whether a long document may be chunked a window at a time (the chunker only looks at
    #: nearby text: not a Markdown section path, not a syntax tree).
    windowed: bool = False

    def chunk(self, document: Document) -> list[Chunk]:
        return list(self.iter_chunks(document))

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The chunks of ``document``, made as they are taken: a long document is chunked a
        window of ``WINDOW_CHARS`` at a time (by a ``windowed`` chunker), so memory stays bounded."""
        if type(self).chunk is not Chunker.chunk:  # a chunker that makes its chunks itself
            yield from self.chunk(document)
            return
        policy = self.policy
        line_at = LineIndex(document.text) if document.has_lines else None
        index = 0
        for offset, part in self._windows(document):
            for span, text, tokens in self.fitted_spans(part):
                if not text.strip():
                    continue
                if offset:
                    span = replace(span, start=span.start + offset, end=span.end + offset)
                yield self._chunk(document, span, text, tokens, index, policy, line_at)
                index += 1
            self._meter = None

    def _windows(self, document: Document) -> Iterator[tuple[int, Document]]:
        text = document.text
        if not self.windowed or len(text) <= WINDOW_CHARS or document.page_starts:
            yield 0, document
            return
        start = 0
        while start < len(text):
            end = window_end(text, start, WINDOW_CHARS)
            yield start, replace(document, text=text[start:end])
            start = end

    def _chunk(self, document: Document, span: Span, text: str, tokens: int, index: int, policy: str,
               line_at: LineIndex | None) -> Chunk:
        metadata: dict[str, Any] = dict(document.metadata)
        metadata.update(span.metadata)
        metadata.update(
            source=document.source,
            doc_id=document.doc_id,
            title=document.title,
            section=" > ".join(span.section_path),
            section_path=list(span.section_path),
            chunk_index=index,
            start=span.start,
            end=span.end,
            token_count=tokens,
        )
        if line_at is not None:
            metadata["start_line"], metadata["end_line"] = line_at.lines(span.start, span.end)
        if document.marks:
            metadata.update(document.marks_of(span.start, span.end))
        page = document.page_at(span.start)
        if page is not None:
            label = document.page_label
            metadata[label] = page
            metadata[f"{label}_end"] = document.page_at(max(span.start, span.end - 1))
            if len(document.page_metadata) >= page:
                metadata.update(document.page_metadata[page - 1])
        return Chunk(
            id=Chunk.make_id(document.source, document.doc_id, index, span.start, span.end, policy),
            text=text,
            source=document.source,
            doc_id=document.doc_id,
            chunk_index=index,
            start=span.start,
            end=span.end,
            policy=policy,
            content_hash=content_hash(text),
            token_count=tokens,
            metadata=metadata,
        )


#: A longer document is chunked a window at a time by a ``windowed`` chunker.
WINDOW_CHARS = 1_000_000
_WINDOW_BREAKS = (re.compile(r"\n[ \t\r]*\n"), re.compile(r"\n"), re.compile(r"\s"))


def window_end(text: str, start: int, size: int) -> int:
    """Where the window of ``text`` from ``start`` ends: at most ``size`` characters on, at the
    last paragraph break (else line break, else space) in its second half; the end of the text
    when that is near."""
    if len(text) - start <= size:
        return len(text)
    limit = start + size
    for pattern in _WINDOW_BREAKS:
        last = None
        for last in pattern.finditer(text, start + size // 2, limit):
            pass
        if last is not None:
            return last.end()
    return limit


class LineIndex:
    """1-based line numbers of character offsets of ``text`` (a binary search over line starts)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts = np.fromiter((m.end() for m in re.finditer("\n", text)), dtype=np.int64)

    def __call__(self, offset: int) -> int:
        return int(np.searchsorted(self._starts, offset, side="right")) + 1

    def lines(self, start: int, end: int) -> tuple[int, int]:
        """First and last line of ``text[start:end]`` that hold more than white space."""
        body = self.text[start:end]
        first = start + (len(body) - len(body.lstrip()))
        last = start + len(body.rstrip()) - 1
        return (self(first), self(last)) if last >= first else (self(start), self(start))


def create_chunker(
    config: ChunkingConfig, count_tokens: TokenCounter, token_offsets: TokenOffsets | None = None,
    max_tokens: int | None = None, model: str = "the embedder",
) -> Chunker:
    """The configured chunker. ``max_tokens``: the most ``model`` reads of one text; a
    ``chunking.chunk_size`` set above it is refused, as its chunks would be cut short (the default
    size is lowered to it: all-MiniLM-L6 reads 254 tokens besides its two special ones)."""
    from ... import registry
    from ...errors import ConfigError

    if max_tokens is not None and config.chunk_size > max_tokens:
        if "chunk_size" in config.model_fields_set:
            raise ConfigError(
                f"chunking.chunk_size is {config.chunk_size} tokens, but {model} reads at most {max_tokens} tokens "
                f"of a text; set chunking.chunk_size to {max_tokens} or less"
            )
        config = config.model_copy(update={"chunk_size": max_tokens,
                                           "chunk_overlap": min(config.chunk_overlap, max_tokens // 4)})
    cls = registry.resolve("chunker", config.strategy)
    config.options()  # a plugin chunker's section (chunking.<name>), checked before it is built
    return cls(config, count_tokens, token_offsets, max_tokens)
