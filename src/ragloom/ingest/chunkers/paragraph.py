"""Paragraph chunking: paragraphs (split at blank lines) packed up to the token budget."""

from __future__ import annotations

from ._units import UnitChunker, paragraph_ranges


class ParagraphChunker(UnitChunker):
    """Whole paragraphs where they fit; a paragraph larger than a chunk is split by sentences."""

    name = "paragraph"
    windowed = True

    def ranges(self, text: str) -> list[tuple[int, int]]:
        return paragraph_ranges(text, 0, len(text))
