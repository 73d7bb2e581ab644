"""``https://HOST/PATH``: a site crawled within its host and the start page's folder; or
``https://HOST/…/sitemap.xml``: the pages its sitemap (or sitemap index) lists.

Per page: ``robots.txt`` is obeyed (``protego``, the source's User-Agent); a page seen before is asked
for with ``If-None-Match`` / ``If-Modified-Since`` and a 304 costs no body; a page its sitemap dates
(``<lastmod>``) as before is not asked for at all, and the links it had are followed again from the
cursor. Pages (HTML, read by the HTML loader) and the documents they link under the prefix (PDF,
Office, text: by content type) are streamed into the stage, size-limited. A page answering 404 or
410 that was indexed is removed; a 5xx, a timeout or a refused login keeps what was indexed. The
start page (or the sitemap) failing is the source failing: one line, nothing removed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

from ..errors import RemoteRefusedError, RemoteSourceError
from ..ingest.loaders import is_supported
from ..optional import require
from ..stores.sync_state import RemoteItemState
from .base import Connector, Entry, Failed, Fetched, Gone, Skipped, TooLarge, Unchanged
from .fetch import Fetcher, Redirected, Response
from .secrets import token_of
from .sitemaps import MAX_SITEMAP_BYTES, parse_sitemap

#: Content types read, and the suffix that picks their loader.
CONTENT_TYPES = {
    "text/html": ".html", "application/xhtml+xml": ".html", "text/plain": ".txt", "text/markdown": ".md",
    "text/x-markdown": ".md", "application/pdf": ".pdf", "text/csv": ".csv", "application/json": ".json",
    "application/rss+xml": ".rss", "application/atom+xml": ".atom", "application/epub+zip": ".epub",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.oasis.opendocument.text": ".odt", "application/rtf": ".rtf",
}
#: Links kept per page, and sitemap files read per sync, at most.
MAX_LINKS = 2000
MAX_SITEMAPS = 50


def canonical(url: str) -> str:
    """One spelling per page: fragment dropped, dot segments resolved, host lower-cased, default port,
    tracking parameters and query order normalised (``courlan``)."""
    import courlan

    url = urldefrag(url)[0]
    parts = urlsplit(url)
    path = urlsplit(urljoin(f"{parts.scheme}://{parts.netloc}/", parts.path or "/")).path
    url = urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))
    try:
        return urldefrag(courlan.normalize_url(url))[0]
    except Exception:  # noqa: BLE001 - a URL courlan cannot read stays as it is
        return url


class _Links(HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base, self.links, self.nofollow = base, [], False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "base" and values.get("href"):
            self.base = urljoin(self.base, values["href"])
        elif tag == "meta" and values.get("name", "").lower() == "robots" and "nofollow" in values.get("content", ""):
            self.nofollow = True
        elif tag in ("a", "area") and values.get("href") and len(self.links) < MAX_LINKS:
            self.links.append(urljoin(self.base, values["href"].strip()))


def links_of(html: bytes, url: str) -> list[str]:
    parser = _Links(url)
    try:
        parser.feed(html.decode("utf-8", errors="replace"))
        parser.close()
    except Exception:  # noqa: BLE001 - a broken page gives the links read before the break
        pass
    return [] if parser.nofollow else parser.links


class WebConnector(Connector):
    kind = "web"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        settings, spec = self.settings, self.spec
        self.max_pages = spec.settings.max_pages or settings.max_pages
        self.max_depth = spec.settings.max_depth if spec.settings.max_depth is not None else settings.max_depth
        self.fetcher = Fetcher(spec.location, self.stage, allow_private=settings.allow_private_hosts,
                               timeout=settings.timeout, user_agent=settings.user_agent,
                               token=token_of(spec.settings, self.secrets), username=spec.settings.username)
        parts = urlsplit(spec.uri)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.is_sitemap = parts.path.lower().endswith((".xml", ".xml.gz"))
        self.start = canonical(spec.uri)
        self.robots: Any = None
        self._done: set[str] = set()

    # -- what may be crawled ------------------------------------------------------------------
    def in_scope(self, url: str) -> str | None:
        """Why ``url`` is outside the crawl (None: inside it)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or parts.netloc.lower() != self.spec.location:
            return "on another host"
        if url == self.start or parts.path == self.spec.prefix.rstrip("/"):
            return None  # the start page itself (https://h/guide for /guide/)
        if not parts.path.startswith(self.spec.prefix):
            return f"outside {self.spec.prefix}"
        if not self.selected(parts.path[len(self.spec.prefix):] or "/"):
            return "left out by include/exclude"
        return None

    def _redirect_allowed(self, url: str) -> str | None:
        if canonical(url) in self._done:
            return "a page read already"
        why = self.in_scope(url)
        if why is None and self.robots is not None and not self.robots.can_fetch(url, self.settings.user_agent):
            why = "disallowed by robots.txt"
        return None if why is None else f"{why} (a login wall?)" if "outside" in why else why

    # -- the crawl ----------------------------------------------------------------------------
    def scan(self, known: Mapping[str, RemoteItemState], cursor: Mapping[str, Any]) -> Iterator[Entry]:
        self._read_robots()
        queue: deque[tuple[str, int, str]] = deque()  # url, depth, sitemap lastmod
        if self.is_sitemap:
            for entry in self._sitemap_pages(self.spec.uri):
                queue.append((entry.url, 0, entry.lastmod))
        else:
            queue.append((self.spec.uri, 0, ""))
        done = self._done = set()
        pages = 0
        stopped = False
        first = not self.is_sitemap
        while queue:
            url, depth, lastmod = queue.popleft()
            url = canonical(url)
            if url in done or self.in_scope(url) is not None:
                continue
            done.add(url)
            if not self.robots.can_fetch(url, self.settings.user_agent):
                if first:  # never read as "the site is empty now"
                    raise RemoteSourceError(f"{url}: robots.txt disallows the start page for "
                                            f"{self.settings.user_agent!r}; nothing is crawled or removed")
                yield Skipped(url, "disallowed by robots.txt")
                continue
            if pages >= self.max_pages or self.stage.over_budget():
                stopped = True
                break
            pages += 1
            entries, links, final = self._page(url, known.get(url), lastmod, first)
            first = False
            if final != url:
                done.add(final)
            yield from entries
            if self.is_sitemap:  # the sitemap lists the pages; the documents they link are read too
                queue.extend((link, depth + 1, "") for link in links if depth == 0 and _is_document(link))
            elif depth < self.max_depth:
                queue.extend((link, depth + 1, "") for link in links)
        self.complete = not stopped

    def _read_robots(self) -> None:
        Protego = require("protego", extra="web", feature="https:// sources (robots.txt)").Protego  # noqa: N806

        try:
            response = self.fetcher.get(f"{self.origin}/robots.txt", max_bytes=500_000)
        except TooLarge:
            response = None
        if response is not None and response.status >= 500:
            raise RemoteSourceError(f"{self.origin}/robots.txt answered HTTP {response.status}; the site is not "
                                    "crawled until it answers (RFC 9309)")
        text = response.body.decode("utf-8", errors="replace") if response is not None and response.status == 200 \
            else ""
        self.robots = Protego.parse(text)

    def _sitemap_pages(self, url: str) -> list[Any]:
        """Every page of the sitemap at ``url`` (through sitemap indexes); the first one failing fails the source."""
        pages, todo, read = [], [url], 0
        while todo and read < MAX_SITEMAPS:
            current = todo.pop(0)
            read += 1
            try:
                response = self.fetcher.get(current, max_bytes=MAX_SITEMAP_BYTES)
            except TooLarge as exc:
                raise RemoteSourceError(str(exc)) from None
            if response.status != 200:
                raise RemoteSourceError(f"{current}: the sitemap answered HTTP {response.status}; nothing is removed "
                                        "until it can be read")
            try:
                found, more = parse_sitemap(response.body)
            except ValueError as exc:
                raise RemoteSourceError(f"{current}: {exc}") from None
            pages.extend(found)
            todo.extend(canonical(m) for m in more if urlsplit(m).netloc.lower() == self.spec.location)
        return pages

    def _page(self, url: str, known: RemoteItemState | None, lastmod: str, first: bool
              ) -> tuple[list[Entry], list[str], str]:
        """The entries of one page, the links to follow from it, and its final URL."""
        old_links = list(known.data.get("links", [])) if known is not None else []
        if known is not None and lastmod and known.data.get("lastmod") == lastmod and "failed" not in known.data:
            return [Unchanged(url)], old_links, url  # its sitemap dates it as before: not even asked for
        headers = {}
        if known is not None and "failed" not in known.data:
            if known.data.get("etag"):
                headers["If-None-Match"] = known.data["etag"]
            if known.data.get("last_modified"):
                headers["If-Modified-Since"] = known.data["last_modified"]
        suffix = _suffix_of_url(url)
        target = self.stage.file_for(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] or "index", "")
        try:
            response = self.fetcher.get(url, headers, into=target, allow=self._redirect_allowed,
                                        accept=lambda kind: _suffix_for(kind, suffix) is not None)
        except Redirected as exc:
            if first:
                raise
            return [Skipped(url, str(exc).replace(" (a login wall?)", "") if "read already" in str(exc)
                            else str(exc))], [], url
        except TooLarge as exc:
            if first:
                raise RemoteSourceError(str(exc)) from None
            return [Skipped(url, str(exc))], [], url
        except RemoteRefusedError:
            raise  # an address refused is the source's problem, not one page's
        except RemoteSourceError as exc:
            if first:
                raise
            return [Failed(url, str(exc))], old_links, url
        if first and response.status not in (200, 304):
            raise RemoteSourceError(f"{url}: the start page answered HTTP {response.status}; nothing is removed")
        return self._answered(url, known, lastmod, response, suffix, old_links)

    def _answered(self, url: str, known: RemoteItemState | None, lastmod: str, response: Response, suffix: str,
                  old_links: list[str]) -> tuple[list[Entry], list[str], str]:
        """What a page's answer means: unchanged (304), gone (404, 410), failed, skipped, or fetched."""
        final = canonical(response.url)
        if response.status == 304:
            return [Unchanged(url, {**known.data, "lastmod": lastmod} if known and lastmod else None)], old_links, url
        if response.status in (404, 410):
            return ([Gone(url)] if known is not None else [Skipped(url, f"not found (HTTP {response.status})")]), [], url
        if response.status in (401, 403):
            return [Failed(url, f"the site refused it (HTTP {response.status}, a login wall?); give the source a "
                                f"token_env if it needs one")], old_links, url
        if response.status != 200:
            return [Failed(url, f"HTTP {response.status}")], old_links, url
        kind = response.content_type
        suffix = _suffix_for(kind, suffix)
        if suffix is None or response.path is None:
            return [Skipped(final, f"content type {kind or 'unknown'} is not read")], [], final
        path = response.path.rename(response.path.with_name(response.path.name + suffix))
        links = links_of(path.read_bytes(), final) if suffix == ".html" else []
        data = {"links": links, "lastmod": lastmod, **{k: response.headers[h] for k, h in (
            ("etag", "etag"), ("last_modified", "last-modified")) if h in response.headers}}
        version = response.headers.get("etag") or response.headers.get("last-modified") or str(response.size)
        return [Fetched(final, final, version, path, {"url": final}, data)], links, final

    def close(self) -> None:
        self.fetcher.close()


def _suffix_for(content_type: str, url_suffix: str) -> str | None:
    """The suffix a body of ``content_type`` is read with (the URL's own for an untyped body), or None."""
    return CONTENT_TYPES.get(content_type) or (url_suffix or None if content_type in (
        "", "application/octet-stream") else None)


def _is_document(url: str) -> bool:
    """A link to a document other than a page (a PDF, an Office file), by its name."""
    return _suffix_of_url(url) not in ("", ".html", ".htm", ".xml")


def _suffix_of_url(url: str) -> str:
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return suffix if suffix and is_supported(f"x{suffix}") else ""
