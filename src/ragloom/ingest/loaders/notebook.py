"""Jupyter notebooks (``.ipynb``): Markdown cells as Markdown, code cells fenced, text outputs kept.

Images and other binary outputs (base64 in the notebook) are not text: they are left out, and
the report counts them.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import CorruptDocumentError
from ._markdown import MarkdownWriter
from .base import LoadResult, Loader
from .decode import decode_bytes, empty_result

#: Text outputs longer than this are cut: a cell that printed a whole data frame is not prose.
MAX_OUTPUT_CHARS = 2_000


class NotebookLoader(Loader):
    name = "notebook"
    extensions = (".ipynb",)

    def load(self, path: Path, source: str) -> LoadResult:
        text, warnings = decode_bytes(path.read_bytes(), source)
        try:
            notebook = json.loads(text)
            cells = notebook["cells"] if isinstance(notebook, dict) else None
            if not isinstance(cells, list):
                raise ValueError("no list of cells")
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptDocumentError(
                f"{source} is not a Jupyter notebook ({exc}); re-save it from Jupyter or rename it"
            ) from exc
        language = (notebook.get("metadata", {}).get("kernelspec", {}) or {}).get("language", "") or "python"
        writer = MarkdownWriter()
        binary = 0
        for cell in cells:
            if isinstance(cell, dict):
                binary += _cell(writer, cell, language)
        if binary:
            warnings.append(f"{source}: {binary:,} binary outputs (images, other base64 data) left out")
        if not writer.text.strip():
            result = empty_result(source)
            result.warnings[:0] = warnings
            return result
        return LoadResult([writer.document(path, source, title=_title(writer.text) or path.stem)], warnings)


def _lines(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cell(writer: MarkdownWriter, cell: dict, language: str) -> int:
    """Write the cell; return how many binary outputs it had (left out)."""
    kind = cell.get("cell_type")
    source = _lines(cell.get("source"))
    binary = 0
    if kind == "markdown":
        writer.markdown(source)
    elif kind == "code":
        writer.code(source, language)
        for output in cell.get("outputs") or ():
            binary += _binary_outputs(output)
            text = _output_text(output)
            if text.strip():
                writer.code(text[:MAX_OUTPUT_CHARS], "text")
    elif kind == "raw":
        writer.paragraph(source)
    return binary


def _binary_outputs(output) -> int:
    data = output.get("data") if isinstance(output, dict) else None
    if not isinstance(data, dict):
        return 0
    return sum(1 for kind in data if not (kind.startswith("text/") or kind.endswith("json")))


def _output_text(output) -> str:
    if not isinstance(output, dict):
        return ""
    if output.get("output_type") == "stream":
        return _lines(output.get("text"))[: MAX_OUTPUT_CHARS * 2]
    data = output.get("data") or {}
    return _lines(data.get("text/plain")) if isinstance(data, dict) else ""


def _title(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""
