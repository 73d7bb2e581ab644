"""XML: RSS and Atom feeds as a document per entry (feedparser); any other XML as its text, each
value after the path of elements that holds it (``catalog/book/title: Dune``), a section per
child of the root (the standard library's ElementTree; expat refuses entity-expansion bombs).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

from ...errors import CorruptDocumentError
from ...types import Document
from ._markdown import MarkdownWriter
from .base import LoadResult
from .text import TextFileLoader

_FEED_ROOT = re.compile(r"<(?:rss|feed|rdf:RDF)\b", re.IGNORECASE)
_TAGS = re.compile(r"<[^>]+>")
#: Elements written per section before the rest are cut (a data dump is not prose).
MAX_VALUES = 100_000


class XmlLoader(TextFileLoader):
    name = "xml"
    extensions = (".xml", ".rss", ".atom")
    sandboxed = True

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        if _FEED_ROOT.search(text[:4096]):
            return _feed(text, path, source)
        from defusedxml import DefusedXmlException
        from defusedxml.ElementTree import fromstring

        try:  # entities are refused, never expanded (a "billion laughs" file is a few hundred bytes)
            root = fromstring(text.encode("utf-8"), forbid_dtd=False, forbid_entities=True, forbid_external=True)
        except DefusedXmlException as exc:
            named = f" (the first: {exc.name})" if getattr(exc, "name", None) else ""
            raise CorruptDocumentError(f"{source} declares XML entities{named}, which are not expanded; "
                                       "leave it out or remove its DTD") from exc
        except ElementTree.ParseError as exc:
            raise CorruptDocumentError(f"{source} is not well-formed XML ({exc}); fix or leave it out") from exc
        writer = MarkdownWriter()
        loose = [line for line in _values(root, _local(root.tag), leaves_only=True)]
        if loose:
            writer.paragraph("\n".join(loose))
        for child in root:
            writer.heading(_local(child.tag), 2)
            writer.paragraph("\n".join(_values(child, f"{_local(root.tag)}/{_local(child.tag)}")) or "(empty)")
        return LoadResult([writer.document(path, source, title=path.name, metadata={"format": "xml"})])


def _feed(text: str, path: Path, source: str) -> LoadResult:
    import feedparser

    parsed = feedparser.parse(text)
    feed_title = _plain(parsed.feed.get("title", "")) or path.stem
    documents = []
    for number, entry in enumerate(parsed.entries, start=1):
        body = entry.get("content", [{}])[0].get("value") if entry.get("content") else entry.get("summary", "")
        title = _plain(entry.get("title", ""))
        parts = [f"# {title}" if title else "", _plain(body or "")]
        metadata = {key: str(entry[key]) for key in ("link", "published", "updated", "author") if entry.get(key)}
        documents.append(Document(text="\n\n".join(p for p in parts if p), source=source,
                                  doc_id=str(entry.get("id") or entry.get("link") or f"{path.name}#{number}"),
                                  title=title or feed_title, metadata={"feed": feed_title, **metadata}))
    warnings = [f"{source}: a feed with no entries"] if not documents else []
    return LoadResult(documents, warnings)


def _values(element: ElementTree.Element, path: str, leaves_only: bool = False) -> Iterator[str]:
    """``path: text`` for each element under ``element`` that holds text, and its attributes."""
    count = 0
    stack = [(element, path)]
    while stack and count < MAX_VALUES:
        node, where = stack.pop()
        attributes = " ".join(f"{_local(k)}={v}" for k, v in node.attrib.items())
        text = " ".join((node.text or "").split())
        if (text or attributes) and not (leaves_only and len(node)):
            yield f"{where}{' [' + attributes + ']' if attributes else ''}: {text}".rstrip(": ")
            count += 1
        if not leaves_only:
            stack.extend((child, _deeper(where, _local(child.tag))) for child in reversed(node))


#: Elements of a path kept (the innermost ones): a path 100,000 elements deep is not written out
#: for each of them (that would grow with the square of the depth).
MAX_PATH_PARTS = 32


def _deeper(where: str, tag: str) -> str:
    path = f"{where}/{tag}"
    if path.count("/") >= MAX_PATH_PARTS:
        path = "…/" + path.split("/", 2)[2].removeprefix("…/") if path.startswith("…/") else "…/" + path.split("/", 1)[1]
    return path


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else "node"


def _plain(html: str) -> str:
    return " ".join(_TAGS.sub(" ", html).split())
