"""Markdown files: the text is the raw Markdown, so the section chunker sees the headers."""

from __future__ import annotations

from pathlib import Path

from ..chunkers.markdown import markdown_headers
from .base import LoadResult
from .text import TextFileLoader, single_document


class MarkdownLoader(TextFileLoader):
    name = "markdown"
    extensions = (".md", ".markdown")

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        title = next((h.title for h in markdown_headers(text) if h.level == 1), path.stem)
        return LoadResult([single_document(text, path, source, title=title)])
