"""s3:// sources against moto's S3 server (real boto3 calls over HTTP on 127.0.0.1): objects put,
changed and deleted between syncs, 5,000 objects under one prefix (listing pagination), and a
store that is away, a bucket that is not there and credentials refused, each one line that
removes nothing."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragloom.errors import SourceBusyError


def bucket(s3) -> str:
    name = f"b-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=name)
    return name


def put(s3, name: str, key: str, text: str) -> None:
    s3.put_object(Bucket=name, Key=key, Body=text.encode())


def test_put_change_delete_and_resync(s3, index_at) -> None:
    name = bucket(s3)
    put(s3, name, "docs/ros.md", "# ROS\n\nROS 2 nodes communicate over DDS topics.")
    put(s3, name, "docs/tea.txt", "Green tea is steeped at eighty degrees.")
    put(s3, name, "docs/deep/boat.html", "<html><body><h1>Boats</h1><p>A sloop has one mast.</p></body></html>")
    put(s3, name, "docs/blob.bin", "\x00\x01 not a document")
    put(s3, name, "other/outside.md", "Outside the prefix: never read.")
    index = index_at()
    uri = f"s3://{name}/docs/"

    first = index.sync(uri)
    assert first.status == "ok" and first.error is None and first.complete
    assert sorted(first.added) == [f"s3://{name}/docs/deep/boat.html", f"s3://{name}/docs/ros.md",
                                   f"s3://{name}/docs/tea.txt"]
    assert first.skipped == [f"s3://{name}/docs/blob.bin"] and first.seen == 4
    hit = index.search("how do ROS nodes communicate", k=1)[0]
    assert hit.source == f"s3://{name}/docs/ros.md"
    assert hit.metadata["s3_key"] == "docs/ros.md" and hit.metadata["s3_bucket"] == name
    assert first.requests == 1 + 3  # one page of listing, three bodies (the .bin is never downloaded)

    again = index.sync(uri)
    assert again.bytes_downloaded == 0 and again.requests == 1 and not (again.added or again.updated)
    assert len(again.unchanged) == 3

    put(s3, name, "docs/tea.txt", "Black tea is steeped in boiling water for four minutes.")
    s3.delete_object(Bucket=name, Key="docs/ros.md")
    put(s3, name, "docs/new.md", "Saffron is the stigma of a crocus flower.")
    changed = index.sync(uri)
    assert changed.updated == [f"s3://{name}/docs/tea.txt"] and changed.added == [f"s3://{name}/docs/new.md"]
    assert changed.removed == [f"s3://{name}/docs/ros.md"] and changed.requests == 1 + 2
    sources = {record.path for record in index.store.list_sources()}
    assert sources == {f"s3://{name}/docs/tea.txt", f"s3://{name}/docs/new.md", f"s3://{name}/docs/deep/boat.html"}
    assert "boiling" in index.search("how is black tea steeped", k=1)[0].text
    status = {row["name"]: row for row in index.remote_sources()}[uri]
    assert status["status"] == "ok" and status["cursor_age_seconds"] is not None and status["error"] is None


def test_five_thousand_objects_under_one_prefix_are_listed_page_by_page(s3, index_at) -> None:
    name = bucket(s3)
    keys = [f"many/{i:05d}.txt" for i in range(5000)]
    with ThreadPoolExecutor(8) as pool:  # 50 distinct texts: the vectors are cached by content
        list(pool.map(lambda k: put(s3, name, k, f"Note about topic {int(k[5:10]) % 50}."), keys))
    index = index_at(batch_items=1000)
    report = index.sync(f"s3://{name}/many/")
    assert report.status == "ok" and len(report.added) == 5000 and report.requests == 5 + 5000
    assert len(index.store.list_sources()) == 5000
    for key in keys[:4500]:  # the last page and then some are deleted: nothing else goes
        if int(key[5:10]) % 1000 == 999:
            s3.delete_object(Bucket=name, Key=key)
    again = index.sync(f"s3://{name}/many/")
    assert len(again.removed) == 4 and len(again.unchanged) == 4996 and again.bytes_downloaded == 0
    assert len(index.store.list_sources()) == 4996


def test_an_unreachable_store_a_missing_bucket_and_refused_credentials_remove_nothing(
    s3, index_at, monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = bucket(s3)
    put(s3, name, "a.md", "Quinces are fragrant and hard.")
    index = index_at()
    assert index.sync(f"s3://{name}").added == [f"s3://{name}/a.md"]

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    down = index.sync(f"s3://{name}")
    assert down.status == "failed" and "unreachable" in down.error and down.removed == []
    assert "\n" not in down.error and "testing-secret-key" not in down.error

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.meta.endpoint_url)
    missing = index.sync(f"s3://no-such-{name}")
    assert missing.status == "failed" and "does not exist" in missing.error

    from moto import settings

    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # moto checks the keys from now on
    refused = index.sync(f"s3://{name}")
    assert refused.status == "failed" and "refused the credentials" in refused.error
    assert "testing-secret-key" not in refused.error
    assert [r.path for r in index.store.list_sources()] == [f"s3://{name}/a.md"]
    status = {row["name"]: row for row in index.remote_sources()}[f"s3://{name}/"]
    assert status["status"] == "failed" and "refused" in status["error"]


def test_one_holder_syncs_a_source_at_a_time(s3, index_at) -> None:
    name = bucket(s3)
    put(s3, name, "a.md", "Figs ripen in late summer.")
    index = index_at()
    state = index.store.sync_state()
    assert state.begin_sync(f"s3://{name}/", f"s3://{name}", "someone-else", lease=30) is not None
    with pytest.raises(SourceBusyError, match="another process or replica is syncing"):
        index.sync(f"s3://{name}")


def test_an_interrupted_sync_keeps_its_committed_batches_and_the_next_one_goes_on(s3, index_at) -> None:
    name = bucket(s3)
    for n in range(50):
        put(s3, name, f"notes/{n:02d}.md", f"# Note {n}\n\nThe locker code of room {n} is {n * 7 + 3}.\n")
    index = index_at(batch_items=10)
    seen = []

    def stop_after_25() -> None:
        seen.append(1)
        if len(seen) > 25:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index.sync(f"s3://{name}/notes/", check=stop_after_25)
    state = index.store.sync_state()
    committed = state.remote_items(f"s3://{name}/notes/")
    assert len(committed) == 20  # two whole batches; the third was not yet ingested
    assert {r.path for r in index.store.list_sources()} == {i.source for i in committed.values()}
    assert state.remote_source(f"s3://{name}/notes/").status == "interrupted"
    rest = index.sync(f"s3://{name}/notes/")
    assert rest.status == "ok" and len(rest.added) == 30 and len(rest.unchanged) == 20
    assert rest.requests == 1 + 30  # one listing, and only the bodies not committed before
    assert len(index.store.list_sources()) == 50
