"""PowerPoint files (``.pptx``) through python-pptx: one section per slide, ``slide`` in metadata.

Each slide gives its title (the section heading), the text of its shapes in reading order
(top to bottom, left to right), its tables as Markdown tables, its charts as their title and a table
of their categories and series, the descriptions (alt text) of its pictures, and its speaker notes.
"""

from __future__ import annotations

from pathlib import Path

from ._archive import ArchiveDocumentLoader
from ._markdown import MarkdownWriter, one_line

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"


class PptxLoader(ArchiveDocumentLoader):
    name = "pptx"
    extensions = (".pptx",)
    kind, noun = "PowerPoint (.pptx)", "a PowerPoint presentation"
    page_label = "slide"
    version = 2  # charts and alt text are read

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        from pptx import Presentation

        presentation = Presentation(str(path))
        for number, slide in enumerate(presentation.slides, start=1):
            writer.new_page()
            _slide(writer, slide, number)
        return (presentation.core_properties.title or "").strip(), {"slides": len(presentation.slides)}


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
    if getattr(shape, "has_chart", False) and shape.has_chart:
        _chart(writer, shape.chart)
    elif getattr(shape, "has_table", False) and shape.has_table:
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
    description = _alt_text(shape)
    if description:
        writer.paragraph(f"Image: {description}")


def _alt_text(shape) -> str:
    """A picture's description (its alt text), or ""."""
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        return ""
    properties = shape._element.find(f".//{_P}cNvPr")
    return one_line(properties.get("descr") or "") if properties is not None else ""


def _chart(writer: MarkdownWriter, chart) -> None:
    """A chart as its title and a table: a row per category, a column per series."""
    title = one_line(chart.chart_title.text_frame.text) if chart.has_title and chart.chart_title.has_text_frame else ""
    writer.paragraph(f"Chart: {title}" if title else "Chart")
    for plot in chart.plots:
        series = list(plot.series)
        categories = [str(c) for c in plot.categories]
        if not series:
            continue
        rows = [[category, *(_number(s.values[i]) if i < len(s.values) else "" for s in series)]
                for i, category in enumerate(categories or [str(i + 1) for i in range(len(series[0].values))])]
        writer.table(rows, header=["category", *(s.name or f"series {n + 1}" for n, s in enumerate(series))])


def _number(value) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
