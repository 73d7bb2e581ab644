"""E-books (``.epub``) through ebooklib: the book's author and description, then its chapters in reading
order, each a section."""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup

from ._archive import ArchiveDocumentLoader
from ._html_markdown import write_html
from ._markdown import MarkdownWriter


class EpubLoader(ArchiveDocumentLoader):
    name = "epub"
    extensions = (".epub",)
    kind, noun = "EPUB (.epub)", "an EPUB e-book"
    version = 2  # author, description, publisher and date are read

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        import ebooklib
        from ebooklib import epub

        book = epub.read_epub(str(path), options={"ignore_ncx": True})
        metadata = _book_metadata(book)
        if metadata:
            writer.paragraph("\n".join(f"{key.title()}: {value}" for key, value in metadata.items()))
        for item_id, _linear in book.spine:
            item = book.get_item_with_id(item_id)
            if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
                write_html(writer, item.get_content())
        titles = book.get_metadata("DC", "title")
        return (str(titles[0][0]).strip() if titles else ""), {k: v for k, v in metadata.items() if k != "description"}


def _book_metadata(book) -> dict[str, str]:
    """The book's author(s), description, publisher and date, as its Dublin Core metadata has them."""
    found = {}
    for key, term in (("author", "creator"), ("description", "description"), ("publisher", "publisher"),
                      ("date", "date")):
        values = [" ".join(BeautifulSoup(str(v[0]), "html.parser").get_text(" ").split())
                  for v in book.get_metadata("DC", term) if v and v[0]]
        if any(values):
            found[key] = "; ".join(v for v in values if v)
    return found
