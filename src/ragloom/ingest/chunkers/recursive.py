"""The default chunker: separator-aware splitting to a token budget, with overlap.

It follows LangChain's RecursiveCharacterTextSplitter — prefer to break between
paragraphs, then lines, then sentences, then words, and only inside a word when
nothing else fits — but measures in the embedder's tokens and runs greedily over
token positions: each chunk ends at the last occurrence of the strongest separator
that fits in the budget, so every chunk costs a few binary searches, not a re-count.

Overlap is taken from the tail of the previous chunk, starting at a sentence or line
start where one falls inside the overlap, otherwise at a word start, and counts
towards the next chunk's budget, so no chunk exceeds ``chunk_size``.
"""

from __future__ import annotations

from ...types import Document
from ._split import split_recursive
from .base import Chunker, Span


class RecursiveChunker(Chunker):
    name = "recursive"
    windowed = True

    def split(self, document: Document) -> list[Span]:
        meter = self.meter(document)
        ranges = split_recursive(
            meter, 0, len(document.text), self.config.chunk_size, self.config.chunk_overlap
        )
        return [Span(start, end) for start, end in ranges]
