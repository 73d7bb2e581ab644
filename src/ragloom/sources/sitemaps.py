"""Sitemaps (sitemaps.org): ``<urlset>`` pages with their ``<lastmod>``, and ``<sitemapindex>`` files
that name more sitemaps; gzipped or not. Parsed with the standard library's expat, whose limits
refuse entity expansion bombs; each file is size-limited by the fetcher that read it."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from xml.etree import ElementTree

#: A sitemap file decompressed beyond this is refused (the sitemaps.org limit is 50 MB).
MAX_SITEMAP_BYTES = 50_000_000


@dataclass(frozen=True)
class SitemapEntry:
    url: str
    lastmod: str = ""


def parse_sitemap(data: bytes) -> tuple[list[SitemapEntry], list[str]]:
    """The pages a sitemap lists, and the sitemaps a sitemap index names. ValueError if it is neither."""
    if data[:2] == b"\x1f\x8b":
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = decompressor.decompress(data, MAX_SITEMAP_BYTES)
        if decompressor.unconsumed_tail:
            raise ValueError(f"the sitemap is larger than {MAX_SITEMAP_BYTES / 1e6:g} MB uncompressed")
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise ValueError(f"not a sitemap ({exc})") from None
    tag = _local(root.tag)
    if tag not in ("urlset", "sitemapindex"):
        raise ValueError(f"not a sitemap (its root is <{tag}>)")
    pages, sitemaps = [], []
    for child in root:
        fields = {_local(node.tag): (node.text or "").strip() for node in child}
        if not fields.get("loc"):
            continue
        if tag == "urlset":
            pages.append(SitemapEntry(fields["loc"], fields.get("lastmod", "")))
        else:
            sitemaps.append(fields["loc"])
    return pages, sitemaps


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]

