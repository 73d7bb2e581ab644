"""PowerPoint files (``.pptx``) through python-pptx: one section per slide, ``slide`` in metadata.

Each slide gives its title (the section heading), the text of its shapes in reading order
(top to bottom, left to right), its tables as Markdown tables, and its speaker notes.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import CorruptDocumentError
from ._archive import check_archive, library_error
from ._markdown import MarkdownWriter, one_line
from .base import LoadResult, Loader
from .decode import empty_result


class PptxLoader(Loader):
    name = "pptx"
    extensions = (".pptx",)

    def load(self, path: Path, source: str) -> LoadResult:
        check_archive(path, source, "PowerPoint (.pptx)")
        from pptx import Presentation

        try:
            presentation = Presentation(str(path))
            writer = MarkdownWriter()
            for number, slide in enumerate(presentation.slides, start=1):
                writer.new_page()
                _slide(writer, slide, number)
            title = (presentation.core_properties.title or "").strip()
            slides = len(presentation.slides)
        except CorruptDocumentError:
            raise
        except Exception as exc:  # python-pptx raises KeyError, ValueError, lxml errors on damaged parts
            raise library_error(source, "a PowerPoint presentation", exc) from exc
        if not writer.text.strip():
            return empty_result(source)
        document = writer.document(
            path, source, title=title or path.stem, metadata={"slides": slides}, page_label="slide"
        )
        return LoadResult([document])


def _slide(writer: MarkdownWriter, slide, number: int) -> None:
    title_shape = slide.shapes.title
    title = one_line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
    writer.heading(f"Slide {number}: {title}" if title else f"Slide {number}", 2)
    for shape in sorted(slide.shapes, key=lambda s: ((s.top or 0), (s.left or 0))):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        _shape(writer, shape)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            writer.paragraph("Notes: " + notes.text.strip())


def _shape(writer: MarkdownWriter, shape) -> None:
    if getattr(shape, "has_table", False) and shape.has_table:
        writer.table([cell.text for cell in row.cells] for row in shape.table.rows)
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            text = paragraph.text
            if not text.strip():
                continue
            if paragraph.level > 0 or len(shape.text_frame.paragraphs) > 1:
                writer.item(text, level=paragraph.level)
            else:
                writer.paragraph(text)
    elif shape.shape_type is not None and getattr(shape, "shapes", None) is not None:  # a group
        for inner in shape.shapes:
            _shape(writer, inner)
