"""Remote sources: initial and no-change syncs of an S3 prefix (moto's S3 server) and of a fixture
website, and the time from a remote change to being searchable under `serve`'s scheduler.

Reports per source: wall time, requests sent, bytes downloaded and, for the site, bodies the server
sent (200) against conditional answers (304). Targets: a no-change re-sync downloads no object
body, and sends at most one conditional request per page.

    python -m benchmarks remote_sync [--objects 5000] [--pages 2000] [--latency] [--interval SECONDS]
        [--json benchmarks/results/remote-sync.json]

``--latency`` serves the index (create_app under uvicorn) with the S3 prefix as a configured source at
``--interval`` (default: sources.interval, the scheduler's default), changes one object right after
a scheduled sync ended, and times until a search finds the new text: the worst case is about one
interval plus a sync.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .. import harness

WORDS = ("harbour lantern granite orchard falcon meadow copper willow ember tundra quartz lagoon cedar "
         "beacon saffron glacier mosaic thistle canyon velvet juniper monsoon obsidian prairie walnut").split()


def text(seed: int, words: int = 60) -> str:
    rng = random.Random(seed)
    return f"Record {seed}. " + " ".join(rng.choice(WORDS) for _ in range(words)) + f". Code r{seed}z."


def machine() -> dict:
    return {**harness.machine(), "load_1min_start": harness.load_average(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


# -- S3 -----------------------------------------------------------------------------------------------
def s3_bucket(bucket: str):  # noqa: ANN201 - moto's server and a boto3 client
    """A moto S3 server on a free port, the environment pointed at it, and ``bucket`` made."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(AWS_ENDPOINT_URL=f"http://{host}:{port}", AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench-secret", AWS_DEFAULT_REGION="us-east-1")
    client = boto3.client("s3")
    client.create_bucket(Bucket=bucket)
    return server, client


def s3_run(objects: int, root: Path, embedder) -> dict:
    from ragloom import Index
    from ragloom.config import Config

    server, client = s3_bucket("bench")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: client.put_object(Bucket="bench", Key=f"docs/{n:05d}.txt", Body=text(n).encode()),
                      range(objects)))
    config = Config.from_dict({"index": str(root / "s3-index")})
    results = {}
    with Index.open(root / "s3-index", config, embedder=embedder) as index:
        for name in ("initial", "no_change"):
            started = time.perf_counter()
            report = index.sync("s3://bench/docs/")
            results[name] = {"seconds": round(time.perf_counter() - started, 2), "requests": report.requests,
                             "bytes_downloaded": report.bytes_downloaded, "added": len(report.added),
                             "unchanged": len(report.unchanged), "status": report.status,
                             "chunks_embedded": report.chunks_embedded}
        client.put_object(Bucket="bench", Key="docs/00007.txt", Body=b"Changed: the lighthouse keeper retired.")
        started = time.perf_counter()
        report = index.sync("s3://bench/docs/")
        results["one_changed"] = {"seconds": round(time.perf_counter() - started, 2), "requests": report.requests,
                                  "bytes_downloaded": report.bytes_downloaded, "updated": len(report.updated)}
    server.stop()
    return results


# -- a fixture website ----------------------------------------------------------------------------------
class Site:
    """``pages`` HTML pages under /site/: an index linking to sections of 50 pages each; ETags and
    Last-Modified honoured; counts what it sends."""

    def __init__(self, pages: int) -> None:
        self.lock = threading.Lock()
        self.counts = {"200": 0, "304": 0, "other": 0, "bytes": 0}
        self.modified = time.time() - 86400
        self.pages: dict[str, bytes] = {}
        sections = (pages + 49) // 50
        self.pages["/site/"] = self.html("Site", "The front page.", [f"s{i}/" for i in range(sections)])
        for s in range(sections):
            members = [n for n in range(s * 50, min(pages, s * 50 + 50))]
            self.pages[f"/site/s{s}/"] = self.html(f"Section {s}", f"Section {s}.", [f"p{n}.html" for n in members])
            for n in members:
                self.pages[f"/site/s{s}/p{n}.html"] = self.html(f"Page {n}", text(100_000 + n), ["../"])

    @staticmethod
    def html(title: str, body: str, links: list[str]) -> bytes:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        return f"<html><head><title>{title}</title></head><body><nav>{anchors}</nav><h1>{title}</h1><p>{body}</p></body></html>".encode()

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

            def do_GET(self) -> None:  # noqa: N802
                body = site.pages.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    site.count("other", 0)
                    return
                tag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
                since = self.headers.get("If-Modified-Since")
                if self.headers.get("If-None-Match") == tag or (
                        since and parsedate_to_datetime(since).timestamp() >= int(site.modified)):
                    self.send_response(304)
                    self.send_header("ETag", tag)
                    self.end_headers()
                    site.count("304", 0)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", tag)
                self.send_header("Last-Modified", formatdate(site.modified, usegmt=True))
                self.end_headers()
                self.wfile.write(body)
                site.count("200", len(body))

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}"

    def count(self, kind: str, size: int) -> None:
        with self.lock:
            self.counts[kind] += 1
            self.counts["bytes"] += size


def site_run(pages: int, root: Path, embedder) -> dict:
    from ragloom import Index
    from ragloom.config import Config

    site = Site(pages)
    server, base = site.serve()
    config = Config.from_dict({"index": str(root / "web-index"), "sources": {
        "allow_private_hosts": True, "max_pages": pages + 1000}})
    results = {"pages_on_site": len(site.pages)}
    with Index.open(root / "web-index", config, embedder=embedder) as index:
        for name in ("initial", "no_change"):
            before = dict(site.counts)
            started = time.perf_counter()
            report = index.sync(f"{base}/site/")
            results[name] = {"seconds": round(time.perf_counter() - started, 2), "requests": report.requests,
                             "bytes_downloaded": report.bytes_downloaded, "added": len(report.added),
                             "unchanged": len(report.unchanged), "status": report.status,
                             "server_200": site.counts["200"] - before["200"],
                             "server_304": site.counts["304"] - before["304"],
                             "server_other": site.counts["other"] - before["other"]}
    server.shutdown()
    return results


# -- change to searchable under serve's scheduler -------------------------------------------------------
def latency_run(root: Path, interval: float | None) -> dict:
    import uvicorn

    from ragloom.config import Config
    from ragloom.server.app import create_app

    server, client = s3_bucket("live")
    for n in range(50):
        client.put_object(Bucket="live", Key=f"notes/{n}.txt", Body=text(n).encode())
    source = {"uri": "s3://live/notes/", **({"interval": interval} if interval else {})}
    config = Config.from_dict({"index": str(root / "live-index"), "sources": {"remote": {"notes": source}}})
    app = create_app(config)
    state = app.state.ragloom
    service = next(iter(state.indexes.values())).service
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    threading.Thread(target=uv.run, daemon=True).start()
    sync_state = service.writer.store.sync_state()

    def finished_at() -> float | None:
        row = sync_state.remote_source("notes")
        return row.finished_at if row is not None and row.holder is None and row.status == "ok" else None

    while finished_at() is None:
        time.sleep(0.2)
    first = finished_at()
    changed = time.time()
    client.put_object(Bucket="live", Key="notes/7.txt", Body=b"The ferry now leaves from pier nineteen at dawn.")
    while True:
        hits = service.search("which pier does the ferry leave from", k=1).hits
        if hits and "nineteen" in hits[0].text:
            break
        time.sleep(0.2)
    searchable = time.time() - changed
    uv.should_exit = True
    server.stop()
    effective = interval or config.sources.interval
    return {"interval_seconds": effective, "change_after_sync_end_seconds": round(changed - first, 2),
            "change_to_searchable_seconds": round(searchable, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency", action="store_true")
    parser.add_argument("--interval", type=float, default=None)
    parser.add_argument("--skip", nargs="*", default=[], choices=["s3", "site"])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from ragloom.config import EmbedderConfig
    from ragloom.embed import create_embedder

    embedder = create_embedder(EmbedderConfig())
    result = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="ragloom-remote-bench-") as folder:
        root = Path(folder)
        os.environ["RAGLOOM_CACHE_DIR"] = str(root / "cache")
        if "s3" not in args.skip:
            result["s3"] = {"objects": args.objects, **s3_run(args.objects, root, embedder)}
            print(json.dumps({"s3": result["s3"]}), flush=True)
        if "site" not in args.skip:
            result["site"] = {"pages": args.pages, **site_run(args.pages, root, embedder)}
            print(json.dumps({"site": result["site"]}), flush=True)
        if args.latency:
            result["latency"] = latency_run(root, args.interval)
            print(json.dumps({"latency": result["latency"]}), flush=True)
    result["machine"]["load_1min_end"] = harness.load_average()
    harness.record(result)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
