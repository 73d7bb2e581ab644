"""E-books (``.epub``) through ebooklib: chapters in reading order, each a section."""

from __future__ import annotations

from pathlib import Path

from ...errors import CorruptDocumentError
from ._archive import check_archive, library_error
from ._html_markdown import write_html
from ._markdown import MarkdownWriter
from .base import LoadResult, Loader
from .decode import empty_result


class EpubLoader(Loader):
    name = "epub"
    extensions = (".epub",)

    def load(self, path: Path, source: str) -> LoadResult:
        check_archive(path, source, "EPUB (.epub)")
        import ebooklib
        from ebooklib import epub

        try:
            book = epub.read_epub(str(path), options={"ignore_ncx": True})
            writer = MarkdownWriter()
            for item_id, _linear in book.spine:
                item = book.get_item_with_id(item_id)
                if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
                    continue
                write_html(writer, item.get_content())
            titles = book.get_metadata("DC", "title")
        except CorruptDocumentError:
            raise
        except Exception as exc:  # ebooklib raises KeyError, lxml and zip errors on damaged books
            raise library_error(source, "an EPUB e-book", exc) from exc
        if not writer.text.strip():
            return empty_result(source)
        title = str(titles[0][0]).strip() if titles else ""
        return LoadResult([writer.document(path, source, title=title or path.stem)])
