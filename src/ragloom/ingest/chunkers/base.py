"""The chunker interface.

A chunker implements ``split(document) -> list[Span]``: character ranges of the
document text, each with the section path it belongs to. Everything else (ids, content
hashes, token counts, page numbers, metadata) is derived here, the same for every
strategy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ...config import ChunkingConfig
from ...types import Chunk, Document, content_hash

TokenCounter = Callable[[str], int]
#: Character span of each token of a text (from the embedder's tokenizer), or None.
TokenOffsets = Callable[[str], "list[tuple[int, int]] | None"]


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    section_path: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


class Chunker(ABC):
    #: Registry name.
    name: str = ""
    #: Bump when the splitting rules change, so chunk ids change with them.
    version: str = "1"

    def __init__(
        self,
        config: ChunkingConfig,
        count_tokens: TokenCounter,
        token_offsets: TokenOffsets | None = None,
    ) -> None:
        self.config = config
        self.count_tokens = count_tokens
        self.token_offsets = token_offsets

    @property
    def policy(self) -> str:
        """Identifies the splitting rules and their parameters; part of every chunk id."""
        c = self.config
        return f"{self.name}/v{self.version}/size={c.chunk_size}/overlap={c.chunk_overlap}"

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

    def chunk(self, document: Document) -> list[Chunk]:
        chunks: list[Chunk] = []
        policy = self.policy
        for span in self.spans(document):
            text = document.text[span.start : span.end]
            if not text.strip():
                continue
            index = len(chunks)
            metadata: dict[str, Any] = dict(document.metadata)
            metadata.update(span.metadata)
            section = " > ".join(span.section_path)
            tokens = self.count_tokens(text)
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


def create_chunker(
    config: ChunkingConfig, count_tokens: TokenCounter, token_offsets: TokenOffsets | None = None
) -> Chunker:
    from ... import registry

    cls = registry.resolve("chunker", config.strategy)
    return cls(config, count_tokens, token_offsets)
