"""Sentence chunking: whole sentences (Punkt, or a regex) packed up to the token budget."""

from __future__ import annotations

from ._units import UnitChunker, sentence_ranges


class SentenceChunker(UnitChunker):
    """Never cuts inside a sentence unless the sentence alone is larger than a chunk."""

    name = "sentence"
    windowed = True

    def ranges(self, text: str) -> list[tuple[int, int]]:
        return sentence_ranges(text, 0, len(text), self.config.sentence_splitter)
