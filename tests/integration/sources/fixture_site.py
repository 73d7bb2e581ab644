"""A fixture website served by ``pytest-httpserver`` on 127.0.0.1: pages held in a dict the test
changes between syncs, ETags and Last-Modified honoured (304), and the hostile corners a crawler
meets: a slow page, a 50 MB body, a login wall, redirects on and off the host, robots.txt."""

from __future__ import annotations

import gzip
import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime

from werkzeug import Request, Response


@dataclass
class Page:
    body: bytes | Callable[[], Iterator[bytes]]
    content_type: str = "text/html; charset=utf-8"
    etag: bool = True
    last_modified: float | None = None
    status: int = 200
    location: str | None = None
    delay: float = 0.0


@dataclass
class Site:
    pages: dict[str, Page] = field(default_factory=dict)
    requests: list[tuple[str, int]] = field(default_factory=list)
    bodies_sent: int = 0

    def handler(self, request: Request) -> Response:
        page = self.pages.get(request.path)
        if page is None:
            return self._log(request, Response("not found", status=404))
        if page.delay:
            time.sleep(page.delay)
        if page.location is not None:
            return self._log(request, Response("", status=page.status, headers={"Location": page.location}))
        if page.status != 200:
            return self._log(request, Response("no", status=page.status))
        headers = {"Content-Type": page.content_type}
        if callable(page.body):  # streamed, no length given
            return self._log(request, Response(page.body(), headers=headers, direct_passthrough=True))
        tag = '"' + hashlib.sha1(page.body).hexdigest()[:16] + '"'
        if page.etag:
            headers["ETag"] = tag
            if request.headers.get("If-None-Match") == tag:
                return self._log(request, Response(status=304, headers={"ETag": tag}))
        if page.last_modified is not None:
            headers["Last-Modified"] = formatdate(page.last_modified, usegmt=True)
            since = request.headers.get("If-Modified-Since")
            if since and parsedate_to_datetime(since).timestamp() >= int(page.last_modified):
                return self._log(request, Response(status=304))
        self.bodies_sent += 1
        return self._log(request, Response(page.body, headers=headers))

    def _log(self, request: Request, response: Response) -> Response:
        self.requests.append((request.full_path.rstrip("?"), response.status_code))
        return response

    def html(self, path: str, title: str, text: str, links: list[str] = (), **options) -> None:
        anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
        body = (f"<html><head><title>{title}</title></head><body><nav><ul>{anchors}</ul></nav>"
                f"<main><h1>{title}</h1><p>{text}</p></main></body></html>").encode()
        self.pages[path] = Page(body, **options)

    def sitemap(self, path: str, urls: dict[str, str], gzipped: bool = False) -> None:
        entries = "".join(f"<url><loc>{u}</loc><lastmod>{m}</lastmod></url>" for u, m in urls.items())
        body = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"{entries}</urlset>").encode()
        self.pages[path] = Page(gzip.compress(body) if gzipped else body,
                                "application/gzip" if gzipped else "application/xml")

    def sitemap_index(self, path: str, sitemaps: list[str]) -> None:
        entries = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in sitemaps)
        body = ('<?xml version="1.0" encoding="UTF-8"?><sitemapindex '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>').encode()
        self.pages[path] = Page(body, "application/xml")

    def asked(self, path: str) -> list[int]:
        """The statuses of the requests for ``path``."""
        return [status for asked, status in self.requests if asked == path]


def fifty_megabytes() -> Iterator[bytes]:
    block = b"<p>" + b"x" * 65_530 + b"</p>"
    for _ in range(50_000_000 // len(block) + 1):
        yield block


def pdf_bytes(text: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())
