"""A source's text rebuilt from its chunks, with where each chunk lies in it (GET /v1/sources/{id}/text).

Chunks record their offsets in their document's text, and overlap where the chunker made them
overlap; laid out by offset, each character is written once. What lies between two chunks
(blank lines the chunker skipped) is not stored: a line break stands for it, two for a longer gap. Documents of
one source (a .jsonl corpus has one per line) follow one another, a blank line apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..types import Hit


class SourceChunk(BaseModel):
    chunk_id: str
    doc_id: str
    chunk_index: int
    section: str = ""
    page: int | None = None
    start: int = Field(..., description="where the chunk begins in `text` (characters)")
    end: int = Field(..., description="where it ends in `text`")


class SourceTextModel(BaseModel):
    source: dict[str, Any] = Field(..., description="the source, as GET /v1/sources lists it")
    text: str = Field(..., description="the source's text as the index holds it")
    chunks: list[SourceChunk] = Field(default_factory=list, description="each chunk's place in `text`, in order")


def source_view(source: BaseModel, chunks: Sequence[Hit]) -> SourceTextModel:
    """``chunks`` (a source's, in document order) laid out into one text."""
    out: list[str] = []
    length = 0
    placed: list[SourceChunk] = []
    by_doc: dict[str, list[Hit]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    for number, doc_chunks in enumerate(by_doc.values()):
        if number:
            out.append("\n\n")
            length += 2
        base, covered = length, None  # covered: the document offset written up to
        for chunk in sorted(doc_chunks, key=lambda c: (_start(c), c.chunk_index)):
            body = _body(chunk)
            start = _start(chunk)
            if covered is not None and start > covered:
                gap = "\n" if start - covered == 1 else "\n\n"
                out.append(gap)
                length += len(gap)
                base = length - start
            elif covered is None:
                base = length - start
            new = body[max(0, (covered or start) - start):]
            out.append(new)
            length += len(new)
            covered = max(covered or 0, start + len(body))
            placed.append(SourceChunk(chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, chunk_index=chunk.chunk_index,
                                      section=chunk.section, page=chunk.page, start=base + start,
                                      end=base + start + len(body)))
    return SourceTextModel(source=source.model_dump(mode="json"), text="".join(out), chunks=placed)


def _start(chunk: Hit) -> int:
    return int(chunk.metadata.get("start", 0))


def _body(chunk: Hit) -> str:
    """The chunk's own span of the document: without a prefix a chunker put before it (a table's header)."""
    span = int(chunk.metadata.get("end", 0)) - _start(chunk)
    return chunk.text[-span:] if 0 < span <= len(chunk.text) else chunk.text
