"""Semantic chunking: split where consecutive sentences stop being about the same thing.

Every sentence is embedded; a chunk ends where the cosine distance between a sentence
and the next is above the ``semantic_percentile``-th percentile of that document's
distances (Kamradt's percentile rule), and a group larger than ``chunk_size`` is packed
into budget-sized pieces at sentence boundaries. Costs one embedding per sentence.
"""

from __future__ import annotations

import numpy as np

from ...types import Document
from ._services import ChunkerServices
from ._units import UnitChunker, fitting_units, pack, sentence_ranges
from .base import Span


def breakpoints(vectors: np.ndarray, percentile: float) -> list[int]:
    """Indices ``i`` such that a chunk ends after sentence ``i`` (distance to ``i + 1`` is high)."""
    if len(vectors) < 3:
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    distances = 1.0 - np.sum(unit[:-1] * unit[1:], axis=1)
    threshold = np.percentile(distances, percentile)
    return [int(i) for i in np.flatnonzero(distances > threshold)]


class SemanticChunker(UnitChunker):
    name = "semantic"
    services: ChunkerServices | None = None

    def bind(self, services: ChunkerServices) -> None:
        self.services = services

    @property
    def policy(self) -> str:
        model = self.services.embedder().model_id if self.services else "none"
        return f"{super().policy}/percentile={self.config.semantic_percentile:g}/model={model}"

    def split(self, document: Document) -> list[Span]:
        text = document.text
        sentences = sentence_ranges(text, 0, len(text), self.config.sentence_splitter)
        meter = self.meter(document)
        size = self.config.chunk_size
        if len(sentences) < 3 or self.services is None:
            return [Span(s, e) for s, e in pack(meter, fitting_units(meter, sentences, size, "regex"), size)]
        vectors = self.services.embedder().embed_documents([text[s:e] for s, e in sentences])
        cuts = set(breakpoints(np.asarray(vectors), self.config.semantic_percentile))
        groups: list[list[tuple[int, int]]] = [[]]
        for i, sentence in enumerate(sentences):
            groups[-1].append(sentence)
            if i in cuts:
                groups.append([])
        spans = []
        for group in (g for g in groups if g):
            units = fitting_units(meter, group, size, self.config.sentence_splitter)
            spans.extend(Span(s, e) for s, e in pack(meter, units, size))
        return spans
