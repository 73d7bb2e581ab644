"""Markdown files: the text is the raw Markdown, so the section chunker sees the headers.

Embedded ``data:`` URIs (base64 images, attachments) are not text: they are cut out, and
the link or image around them is kept, so a 3 MB screenshot does not become thousands of
chunks of base64.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..chunkers.markdown import markdown_headers
from .base import LoadResult
from .text import TextFileLoader, single_document

#: ``data:[<media type>][;param=value][;base64],<data>``; the data runs to the first character
#: that cannot be in it (a bracket, a quote, a space), so the Markdown around it survives.
_DATA_URI = re.compile(r"(?<![\w-])data:[\w.+-]*/?[\w.+-]*(?:;[\w.+-]+(?:=[\w.+-]+)?)*,[A-Za-z0-9+/=%._~!$&*;:@-]*",
                       re.IGNORECASE)


class MarkdownLoader(TextFileLoader):
    name = "markdown"
    extensions = (".md", ".markdown")
    version = 2  # chunks carry start_line and end_line

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        text, dropped = _DATA_URI.subn("data:", text)
        title = next((h.title for h in markdown_headers(text) if h.level == 1), path.stem)
        warnings = [f"{source}: left out {dropped} embedded data: URI(s) (images or files, not text)"] if dropped else []
        return LoadResult([single_document(text, path, source, title=title, has_lines=True)], warnings)
