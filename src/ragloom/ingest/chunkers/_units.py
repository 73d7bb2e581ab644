"""Units of text (paragraphs, sentences, code blocks) and packing them to a token budget.

Shared by the paragraph, sentence and Markdown chunkers: each finds its units as
character ranges, and ``pack`` groups consecutive units into chunks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...types import Document
from ...models.sentences import paragraph_ranges, sentence_ranges  # noqa: F401 - the chunkers' units
from ._tokens import TokenMeter
from .base import Chunker, Span
from ._split import split_recursive


class UnitChunker(Chunker):
    """Base of the chunkers that pack units, splitting oversize ones by sentence.

    A subclass gives the unit ranges of a text (``ranges``), or overrides ``split``.
    """

    @property
    def policy(self) -> str:
        # The sentence splitter moves boundaries, so it is part of every chunk id.
        return f"{super().policy}/splitter={self.config.sentence_splitter}"

    def split(self, document: Document) -> list[Span]:
        meter = self.meter(document)
        size = self.config.chunk_size
        units = fitting_units(meter, self.ranges(document.text), size, self.config.sentence_splitter)
        return [Span(start, end) for start, end in pack(meter, units, size)]

    def ranges(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError(f"{type(self).__name__} must define ranges() or split()")


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    #: A code block or table: never split, even when larger than the budget.
    atomic: bool = False
    #: A header: kept with the unit after it, even an oversize atomic one.
    sticky: bool = False


def fitting_units(
    meter: TokenMeter, ranges: Iterable[tuple[int, int]], budget: int, splitter: str
) -> list[Unit]:
    """Units no larger than ``budget``: oversize ranges are split by sentence, then by words."""
    units: list[Unit] = []
    for start, end in ranges:
        if meter.count(start, end) <= budget:
            units.append(Unit(start, end))
            continue
        for s, e in sentence_ranges(meter.text, start, end, splitter):
            if meter.count(s, e) <= budget:
                units.append(Unit(s, e))
            else:
                units.extend(Unit(a, b) for a, b in split_recursive(meter, s, e, budget, 0))
    return units


def pack(meter: TokenMeter, units: list[Unit], budget: int) -> list[tuple[int, int]]:
    """Consecutive units grouped greedily into ranges of at most ``budget`` tokens.

    A unit larger than the budget (only an atomic one can be) becomes a range of its own,
    together with a sticky unit (its header) just before it.
    """
    ranges: list[tuple[int, int]] = []
    group: tuple[int, int] | None = None
    previous: Unit | None = None
    for unit in units:
        glued = previous is not None and previous.sticky and unit.atomic
        previous = unit
        if group is not None and (glued or meter.count(group[0], unit.end) <= budget):
            group = (group[0], unit.end)
            continue
        if group is not None:
            ranges.append(group)
        group = (unit.start, unit.end)
    if group is not None:
        ranges.append(group)
    return ranges
