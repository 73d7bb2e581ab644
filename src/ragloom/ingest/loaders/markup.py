"""LaTeX, AsciiDoc and Org files: their text as written, their headings made Markdown headings.

``\\section{Results}``, ``== Results`` and ``** Results`` each become ``## Results`` on the same
line, so the Markdown chunker makes sections of them and every chunk keeps the file's line
numbers; the rest of the markup is kept as it is (it is what the author wrote and searches for).
"""

from __future__ import annotations

import re
from pathlib import Path

from .base import LoadResult
from .text import TextFileLoader, single_document

_LATEX = re.compile(r"^[ \t]*\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\{(.+?)\}[ \t]*$",
                    re.MULTILINE)
_LATEX_LEVELS = {"part": 1, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4, "paragraph": 5}
_ASCIIDOC = re.compile(r"^(={1,6})[ \t]+(\S.*)$", re.MULTILINE)
_ORG = re.compile(r"^(\*{1,6})[ \t]+(\S.*)$", re.MULTILINE)


class MarkupLoader(TextFileLoader):
    name = "markup"
    extensions = (".tex", ".adoc", ".asciidoc", ".org")

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        suffix = path.suffix.lower()
        if suffix == ".tex":
            text = _LATEX.sub(lambda m: f"{'#' * _LATEX_LEVELS[m.group(1)]} {m.group(2)}", text)
        elif suffix == ".org":
            text = _ORG.sub(lambda m: f"{'#' * len(m.group(1))} {m.group(2)}", text)
        else:
            text = _ASCIIDOC.sub(lambda m: f"{'#' * len(m.group(1))} {m.group(2)}", text)
        return LoadResult([single_document(text, path, source, title=path.stem, has_lines=True)])
