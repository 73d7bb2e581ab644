"""Subtitles (``.srt``, ``.vtt``): the words of the cues, grouped into chunks, each chunk with the
time and the file lines of its first and last cue.

A cue is a few words (a line of dialogue) behind a number and a timing line; read as plain text,
the numbers and times were most of the tokens (2 MB of words as 100,000 cues embedded 2.27M
tokens, the same words as paragraphs 300k) and each chunk held a dozen cues' worth of timings.
Here each cue's words are one line of the document, so chunks hold as many cues as fit, and the
times are metadata: ``start_time`` and ``end_time`` (``HH:MM:SS.mmm``), ``start_line`` and
``end_line`` (of the file). A file with no timing line is read as plain text.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...types import Document
from .base import LoadResult
from .text import TextFileLoader, single_document

_TIME = r"((?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})"
#: A cue: its timing line, then its text up to a blank line.
_CUE = re.compile(rf"^[ \t]*{_TIME}[ \t]*-->[ \t]*{_TIME}[^\n]*\n?((?:[^\n]*\S[^\n]*(?:\n|\Z))*)", re.MULTILINE)
#: Styling inside a cue: HTML-like tags (<i>, <c.yellow>, <00:01.000>) and SSA overrides ({\an8}).
_STYLING = re.compile(r"<[^>\n]*>|\{\\[^}\n]*\}")


class SubtitleLoader(TextFileLoader):
    name = "subtitles"
    extensions = (".srt", ".vtt")
    version = 2  # the cues' words grouped, times as metadata (version 1 was read as plain text)

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        words: list[str] = []
        marks: list[int] = []
        metadata: list[dict[str, object]] = []
        offset = 0
        line, counted = 1, 0  # the line at position ``counted``: cues come in order, so counting is linear
        for cue in _CUE.finditer(text):
            body = " ".join(_STYLING.sub(" ", cue.group(3)).split())
            if not body:
                continue
            line += text.count("\n", counted, cue.start(3))
            counted = cue.start(3)
            last_line = line + cue.group(3).rstrip("\n").count("\n")
            marks.append(offset)
            metadata.append({"start_time": _time(cue.group(1)), "end_time": _time(cue.group(2)),
                             "start_line": line, "end_line": last_line})
            words.append(body)
            offset += len(body) + 1
        if not words:
            return LoadResult([single_document(text, path, source, title=path.stem, has_lines=True)])
        document = Document(text="\n".join(words), source=source, doc_id=path.name, title=path.stem,
                            metadata={"format": path.suffix.lstrip(".").lower()},
                            marks=tuple(marks), mark_metadata=tuple(metadata))
        return LoadResult([document])


def _time(value: str) -> str:
    """``HH:MM:SS.mmm`` of an SRT (``00:01:02,500``) or WebVTT (``01:02.500``) time."""
    value = value.replace(",", ".")
    if len(value) == 12:  # HH:MM:SS.mmm already
        return value
    clock, _, fraction = value.partition(".")
    parts = [int(part) for part in clock.split(":")]
    hours, minutes, seconds = ([0] * (3 - len(parts)) + parts)[-3:]
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{fraction.ljust(3, '0')[:3]}"
