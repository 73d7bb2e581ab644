"""Websites: a fixture site on 127.0.0.1 (``fixture_site.py``) crawled for real over HTTP: robots.txt,
a sitemap index, conditional GETs, redirects on and off the host, a 404, a slow page, a 50 MB body,
a login wall, pages changed and removed between syncs, and the guard against private addresses."""

from __future__ import annotations

import time

import pytest

from fixture_site import Page, fifty_megabytes, pdf_bytes


def build(site) -> None:
    site.pages["/robots.txt"] = Page(b"User-agent: *\nDisallow: /docs/secret/\n", "text/plain")
    site.html("/docs/", "Handbook", "Welcome to the team handbook.", [
        "guide.html", "faq.html", "manual.pdf", "secret/plan.html", "missing.html", "slow.html", "huge.html",
        "private", "members", "elsewhere", "moved.html", "../outside.html", "logo.png", "guide.html#install",
    ])
    site.html("/docs/guide.html", "Guide", "Kettles are descaled with citric acid every month.", ["../docs/"])
    site.html("/docs/faq.html", "FAQ", "The office opens at half past seven.", etag=False,
              last_modified=time.time() - 3600)
    site.pages["/docs/manual.pdf"] = Page(pdf_bytes("The espresso machine needs nine bars of pressure."),
                                          "application/pdf")
    site.html("/docs/secret/plan.html", "Plan", "Never to be crawled.")
    site.html("/outside.html", "Outside", "Outside the prefix.")
    site.html("/docs/slow.html", "Slow", "Too slow.", delay=4)
    site.pages["/docs/huge.html"] = Page(fifty_megabytes)
    site.pages["/docs/private"] = Page(b"", status=302, location="/login?next=/docs/private")
    site.html("/login", "Login", "Sign in.")
    site.pages["/docs/members"] = Page(b"", status=401)
    site.pages["/docs/elsewhere"] = Page(b"", status=302, location="http://example.com/stolen")
    site.pages["/docs/moved.html"] = Page(b"", status=301, location="/docs/faq.html")
    site.pages["/docs/logo.png"] = Page(b"\x89PNG....", "image/png")


def test_a_site_is_crawled_synced_and_its_hostile_corners_are_one_line_each(site, index_at) -> None:
    build(site)
    index = index_at(timeout=1.5, max_item_mb=1)
    start = f"{site.base}/docs/"

    first = index.sync(start)
    base = site.base
    assert first.status == "partial" and first.error is None and first.complete
    assert sorted(first.added) == [f"{base}/docs/", f"{base}/docs/faq.html", f"{base}/docs/guide.html",
                                   f"{base}/docs/manual.pdf"]
    reasons = {path.removeprefix(base): reason for path, reason in first.skip_reasons.items()}
    assert reasons["/docs/secret/plan.html"] == "disallowed by robots.txt"
    assert reasons["/docs/missing.html"] == "not found (HTTP 404)"
    assert "larger than 1 MB" in reasons["/docs/huge.html"]
    assert "login wall" in reasons["/docs/private"]
    assert "another host" in reasons["/docs/elsewhere"] and "example.com" in reasons["/docs/elsewhere"]
    assert "content type image/png" in reasons["/docs/logo.png"]
    failures = {f.path.removeprefix(base): f.error for f in first.failed}
    assert "no answer within 1.5 s" in failures["/docs/slow.html"] and "HTTP 401" in failures["/docs/members"]
    assert all("\n" not in line for line in [*reasons.values(), *failures.values()])
    # Never asked: outside the prefix, disallowed, or a login page the wall redirected to; the 50 MB
    # body was cut off after the limit.
    assert site.asked("/outside.html") == site.asked("/docs/secret/plan.html") == site.asked("/login") == []
    assert first.bytes_downloaded < 3_000_000
    assert site.asked("/docs/guide.html") == [200]  # its link with a #fragment is the same page

    hit = index.search("how often are kettles descaled", k=1)[0]
    assert hit.source == f"{base}/docs/guide.html" and hit.metadata["url"] == hit.source
    assert index.search("espresso machine pressure", k=1)[0].source == f"{base}/docs/manual.pdf"

    # No change: one conditional request per page, answered 304, no body.
    site.requests.clear()
    again = index.sync(start)
    for path in ("/docs/", "/docs/guide.html", "/docs/faq.html", "/docs/manual.pdf"):
        assert site.asked(path) == [304], path
    # Bodies read: robots.txt, and the 50 MB page up to the limit again (it has no validator to ask
    # with); the PNG's body is not read at all, its content type being one that is not read.
    assert again.bytes_downloaded <= len(site.pages["/robots.txt"].body) + 1_000_000 + 65_536
    assert not (again.added or again.updated or again.removed)
    assert len(again.unchanged) == 4

    # Changed, removed, unlinked and new pages.
    site.html("/docs/", "Handbook", "Welcome to the team handbook.", ["guide.html", "faq.html", "new.html"])
    site.html("/docs/guide.html", "Guide", "Kettles are descaled with vinegar every week.")
    site.pages.pop("/docs/faq.html")
    site.html("/docs/new.html", "New", "Bicycles are parked in the courtyard.")
    changed = index.sync(start)
    assert sorted(changed.updated) == [f"{base}/docs/", f"{base}/docs/guide.html"]
    assert changed.added == [f"{base}/docs/new.html"]
    assert sorted(changed.removed) == [f"{base}/docs/faq.html", f"{base}/docs/manual.pdf"]
    assert {r.path for r in index.store.list_sources()} == {
        f"{base}/docs/", f"{base}/docs/guide.html", f"{base}/docs/new.html"}
    assert "vinegar" in index.search("how are kettles descaled", k=1)[0].text


def test_a_sitemap_index_lists_the_pages_and_their_lastmod_spares_the_requests(site, index_at) -> None:
    base = site.base
    site.sitemap_index("/docs/sitemap.xml", [f"{base}/docs/sitemap-a.xml", f"{base}/docs/sitemap-b.xml.gz"])
    site.sitemap("/docs/sitemap-a.xml", {f"{base}/docs/a.html": "2026-01-01", f"{base}/docs/b.html": "2026-01-01"})
    site.sitemap("/docs/sitemap-b.xml.gz", {f"{base}/docs/c.html": "2026-01-01"}, gzipped=True)
    site.html("/docs/a.html", "A", "Apricots are dried in the sun.", ["unlisted.html"])
    site.html("/docs/b.html", "B", "Beetroot colours the soup red.")
    site.html("/docs/c.html", "C", "Cardamom pods hold black seeds.")
    site.html("/docs/unlisted.html", "U", "Not in the sitemap: not read.")
    index = index_at()
    uri = f"{base}/docs/sitemap.xml"
    first = index.sync(uri)
    assert first.status == "ok" and sorted(first.added) == [f"{base}/docs/{p}.html" for p in "abc"]
    assert site.asked("/docs/unlisted.html") == []

    site.requests.clear()
    again = index.sync(uri)  # the same lastmod: the pages are not even asked for
    assert len(again.unchanged) == 3 and {path for path, _ in site.requests} == {
        "/robots.txt", "/docs/sitemap.xml", "/docs/sitemap-a.xml", "/docs/sitemap-b.xml.gz"}

    site.sitemap("/docs/sitemap-a.xml", {f"{base}/docs/a.html": "2026-02-01"})  # a changed, b gone
    site.html("/docs/a.html", "A", "Apricots are dried on trays.")
    site.requests.clear()
    changed = index.sync(uri)
    assert changed.updated == [f"{base}/docs/a.html"] and changed.removed == [f"{base}/docs/b.html"]
    assert site.asked("/docs/a.html") == [200] and site.asked("/docs/c.html") == []


def test_private_addresses_are_refused_unless_allowed(site, tmp_path, embedder, index_at) -> None:
    from ragloom import Index
    from ragloom.config import Config

    site.html("/docs/", "Home", "Hello.")
    config = Config.from_dict({"index": str(tmp_path / "idx")})
    with Index.open(tmp_path / "idx", config, embedder=embedder) as index:
        for url in (f"{site.base}/docs/", f"http://localhost:{site.base.rsplit(':', 1)[1]}/docs/"):
            report = index.sync(url)
            assert report.status == "failed" and "a loopback address: refused" in report.error
            assert "allow_private_hosts" in report.error
        assert site.requests == [] and index.store.list_sources() == []
    allowed = index_at("idx")  # the same index, with sources.allow_private_hosts: true
    assert allowed.sync(f"{site.base}/docs/").added == [f"{site.base}/docs/"]


def test_an_unreachable_site_or_a_failing_start_page_removes_nothing(site, index_at) -> None:
    site.html("/docs/", "Home", "Plums are stone fruit.", ["a.html"])
    site.html("/docs/a.html", "A", "Almonds are stone fruit too.")
    index = index_at()
    uri = f"{site.base}/docs/"
    assert len(index.sync(uri).added) == 2
    site.pages["/docs/"] = Page(b"", status=500)
    down = index.sync(uri)
    assert down.status == "failed" and "HTTP 500" in down.error and down.removed == []
    site.pages["/docs/"] = Page(b"", status=404)
    assert "HTTP 404" in index.sync(uri).error
    site.pages["/robots.txt"] = Page(b"", status=503)
    assert "robots.txt answered HTTP 503" in index.sync(uri).error
    assert len(index.store.list_sources()) == 2
    dead = index.sync("http://127.0.0.1:9/docs/")
    assert dead.status == "failed" and "unreachable" in dead.error


def test_a_token_from_the_environment_is_sent_and_never_stored_logged_or_shown(
    site, index_at, tmp_path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    token = "tok-" + "7f3a9c" * 6
    handler = site.handler

    def guarded(request):
        if request.path != "/robots.txt" and request.headers.get("Authorization") != f"Bearer {token}":
            return site._log(request, __import__("werkzeug").Response("who are you?", status=401))
        return handler(request)

    site.handler = guarded
    site.html("/intranet/", "Intranet", "The canteen serves soup on Fridays.")
    uri = f"{site.base}/intranet/"
    caplog.set_level(logging.DEBUG)
    index = index_at(remote={"intranet": {"uri": uri, "token_env": "INTRANET_TOKEN"}})
    missing = index.sync("intranet")  # the variable is not set: one line naming it
    assert missing.status == "failed" and "INTRANET_TOKEN" in missing.error
    monkeypatch.setenv("INTRANET_TOKEN", token)
    assert index.sync("intranet").added == [uri]
    site.pages["/intranet/"] = Page(b"", status=500)
    failed = index.sync("intranet")
    assert failed.status == "failed" and token not in failed.error
    shown = [failed.error, *(e.message for e in caplog.records), repr(index.remote_sources()),
             repr(index.audit_events(1000))]
    assert not any(token in text for text in shown)
    for file in (tmp_path / "index").rglob("*"):  # the index, its audit log and cursors
        if file.is_file():
            assert token.encode() not in file.read_bytes(), file


def test_a_start_page_without_a_slash_is_its_folder_and_robots_refusing_it_removes_nothing(site, index_at) -> None:
    site.html("/guide", "Guide", "Tents are pitched facing away from the wind.", ["guide/a.html", "other.html"])
    site.html("/guide/a.html", "A", "Guy ropes are tightened at dusk.")
    site.html("/other.html", "Other", "Outside the guide: not read.")
    index = index_at()
    report = index.sync(f"{site.base}/guide")
    assert sorted(report.added) == [f"{site.base}/guide", f"{site.base}/guide/a.html"]
    assert site.asked("/other.html") == []
    site.pages["/robots.txt"] = Page(b"User-agent: *\nDisallow: /\n", "text/plain")
    refused = index.sync(f"{site.base}/guide")
    assert refused.status == "failed" and "robots.txt disallows the start page" in refused.error
    assert len(index.store.list_sources()) == 2
