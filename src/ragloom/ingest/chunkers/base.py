"""The chunker interface.

A chunker implements ``split(document) -> list[Span]``: character ranges of the
document text, each with the section path it belongs to. Everything else (ids, content
hashes, token counts, page numbers, metadata) is derived here, the same for every
strategy.
"""

from __future__ import annotations

import bisect
import re
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from ...config import ChunkingConfig
from ...types import Chunk, Document, content_hash
from ._tokens import Span, TokenCounter, TokenOffsets  # noqa: F401 - the chunker interface's types

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

    def fitted_spans(self, document: Document) -> list[tuple[Span, str, int]]:
        """Each span with its text and token count, a span the embedder could not read whole cut
        into pieces that it can (``_fit``)."""
        from ._fit import fit_spans, piece_text
        from ._tokens import TokenMeter

        out: list[tuple[Span, str, int]] = []
        meter: TokenMeter | None = None
        for span in self.spans(document):
            text = piece_text(document.text, span)
            tokens = self.count_tokens(text)
            if self.max_tokens is None or tokens <= self.max_tokens:
                out.append((span, text, tokens))
                continue
            meter = meter or TokenMeter(document.text, self.count_tokens, self.token_offsets)
            for piece in fit_spans(meter, span, self.max_tokens, self.count_tokens):
                piece_body = piece_text(document.text, piece)
                out.append((piece, piece_body, self.count_tokens(piece_body)))
        return out

    def chunk(self, document: Document) -> list[Chunk]:
        chunks: list[Chunk] = []
        policy = self.policy
        line_at = LineIndex(document.text) if document.has_lines else None
        for span, text, tokens in self.fitted_spans(document):
            if not text.strip():
                continue
            index = len(chunks)
            metadata: dict[str, Any] = dict(document.metadata)
            metadata.update(span.metadata)
            section = " > ".join(span.section_path)
            metadata.update(
                source=document.source,
                doc_id=document.doc_id,
                title=document.title,
                section=section,
                section_path=list(span.section_path),
                chunk_index=index,
                start=span.start,
                end=span.end,
                token_count=tokens,
            )
            if line_at is not None:
                metadata["start_line"], metadata["end_line"] = line_at.lines(span.start, span.end)
            page = document.page_at(span.start)
            if page is not None:
                label = document.page_label
                metadata[label] = page
                metadata[f"{label}_end"] = document.page_at(max(span.start, span.end - 1))
                if len(document.page_metadata) >= page:
                    metadata.update(document.page_metadata[page - 1])
            chunks.append(
                Chunk(
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
            )
        return chunks


class LineIndex:
    """1-based line numbers of character offsets of ``text`` (a binary search over line starts)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def __call__(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

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
