"""E-books (``.epub``) through ebooklib: chapters in reading order, each a section."""

from __future__ import annotations

from pathlib import Path

from ._archive import ArchiveDocumentLoader
from ._html_markdown import write_html
from ._markdown import MarkdownWriter


class EpubLoader(ArchiveDocumentLoader):
    name = "epub"
    extensions = (".epub",)
    kind, noun = "EPUB (.epub)", "an EPUB e-book"

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        import ebooklib
        from ebooklib import epub

        book = epub.read_epub(str(path), options={"ignore_ncx": True})
        for item_id, _linear in book.spine:
            item = book.get_item_with_id(item_id)
            if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
                write_html(writer, item.get_content())
        titles = book.get_metadata("DC", "title")
        return (str(titles[0][0]).strip() if titles else ""), {}
