"""BEIR-style corpora: one JSON object per line, ``{"_id", "title", "text"}``, one document each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import CorruptDocumentError
from ...types import Document
from .base import LoadResult
from .text import TextFileLoader

#: Line numbers quoted in a warning about skipped lines; the rest are counted.
_QUOTED_LINES = 10


class JsonlLoader(TextFileLoader):
    name = "jsonl"
    extensions = (".jsonl",)

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        documents: list[Document] = []
        bad: list[int] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            document = _parse_line(line, source)
            if document is None:
                bad.append(number)
            elif document.text.strip():
                documents.append(document)
        if not documents and bad:
            raise CorruptDocumentError(
                f"{source}: no line could be read as a corpus record; each line must be a JSON "
                f'object like {{"_id": "...", "title": "...", "text": "..."}} '
                f"(first bad line: {bad[0]})"
            )
        warnings = [_skipped_warning(source, bad)] if bad else []
        return LoadResult(documents, warnings)


def _parse_line(line: str, source: str) -> Document | None:
    try:
        record: Any = json.loads(line)
    except (json.JSONDecodeError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(record, dict):
        return None
    doc_id = record.get("_id", record.get("id"))
    body = record.get("text", "")
    title = record.get("title") or ""
    if doc_id is None or not isinstance(body, str) or not isinstance(title, str):
        return None
    text = f"{title}\n\n{body}" if title.strip() else body
    return Document(text=text, source=source, doc_id=str(doc_id), title=title)


def _skipped_warning(source: str, bad: list[int]) -> str:
    quoted = ", ".join(str(n) for n in bad[:_QUOTED_LINES])
    more = f" and {len(bad) - _QUOTED_LINES} more" if len(bad) > _QUOTED_LINES else ""
    noun = "line" if len(bad) == 1 else "lines"
    return (
        f"{source}: skipped {len(bad)} unreadable {noun} ({noun} {quoted}{more}); "
        "expected JSON objects with _id and text"
    )
