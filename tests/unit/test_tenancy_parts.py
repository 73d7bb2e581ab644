"""The parts of tenancy on their own: the AND of filters, the keys file, the token bucket, the last gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.errors import FilterError, UsageError
from ragloom.filters import all_of, matches, parse_where
from ragloom.server.keys import KeysFile, RateLimits, parse_key_where

TEAMS = [{"team": "a"}, {"team": "b"}, {"team": ["a", "b"]}, {}, {"team": None}, {"team": "c"}]


@pytest.mark.parametrize("asked", [
    {"team": {"$ne": "a"}}, {"team": {"$in": ["a", "b"]}}, {"team": "b"}, {"team": {"$ne": "zzz"}},
    {"team": {"$gte": ""}}, None, {},
])
def test_no_request_filter_widens_a_key_filter(asked):
    key = {"team": "a"}
    conditions = parse_where(all_of(asked, key))
    for metadata in TEAMS:
        if matches(metadata, conditions):
            assert matches(metadata, parse_where(key)), (asked, metadata)


def test_and_of_filters_parses_every_part_and_refuses_a_non_list():
    assert all_of(None, {}) is None and all_of({"a": 1}, None) == {"a": 1}
    both = all_of({"team": "b"}, {"team": "a"})
    assert both == {"$and": [{"team": "b"}, {"team": "a"}]}
    assert [(c.key, c.value) for c in parse_where(both)] == [("team", "b"), ("team", "a")]
    assert not matches({"team": "a"}, parse_where(both))
    with pytest.raises(FilterError, match=r"\$and needs a list"):
        parse_where({"$and": {"team": "a"}})


def test_keys_file_keeps_hashes_and_is_reread_when_it_changes(tmp_path: Path):
    keys = KeysFile(tmp_path / "keys.json")
    key, record = keys.add("alice", scopes=["read", "write"], indexes=["docs"], where={"team": "a"}, rate=2.0)
    assert key.startswith("rlk_") and record.scope == "write" and record.burst == 2
    assert key not in (tmp_path / "keys.json").read_text()
    assert oct((tmp_path / "keys.json").stat().st_mode & 0o777) == "0o600"
    server_view = KeysFile(tmp_path / "keys.json")
    assert server_view.lookup(key).name == "alice" and server_view.lookup("rlk_guess") is None
    with pytest.raises(UsageError, match="exists"):
        keys.add("alice")
    keys.revoke("alice")
    assert server_view.lookup(key) is None  # the server's copy notices the change without a restart
    with pytest.raises(UsageError, match="no key named"):
        keys.revoke("alice")
    with pytest.raises(UsageError, match="unknown scope"):
        keys.add("bob", scopes=["root"])


def test_a_broken_keys_file_lets_nobody_in(tmp_path: Path):
    keys = KeysFile(tmp_path / "keys.json")
    key, _ = keys.add("alice")
    assert keys.lookup(key) is not None
    (tmp_path / "keys.json").write_text("{not json")
    assert keys.lookup(key) is None


def test_key_filters_are_equalities():
    assert parse_key_where(["team=a", "tier=2"]) == {"team": "a", "tier": 2}
    with pytest.raises(UsageError, match="FIELD=VALUE"):
        parse_key_where(["team!=a"])


def test_token_bucket_allows_the_burst_then_says_how_long_to_wait():
    limits = RateLimits()
    assert limits.take("k", rate=1.0, burst=2) == 0 and limits.take("k", rate=1.0, burst=2) == 0
    wait = limits.take("k", rate=1.0, burst=2)
    assert 0 < wait <= 1.0
    time.sleep(wait + 0.05)
    assert limits.take("k", rate=1.0, burst=2) == 0


def test_keys_add_prints_the_key_alone_on_the_last_line(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    command = [sys.executable, "-m", "ragloom", "keys", "add", "alice", "--scope", "write", "--where", "team=a",
               "--keys-file", str(tmp_path / "keys.json")]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=True)
    key = result.stdout.rstrip("\n").splitlines()[-1]
    assert key.startswith("rlk_") and " " not in key
    stored = json.loads((tmp_path / "keys.json").read_text())["keys"][0]
    assert stored["name"] == "alice" and stored["where"] == {"team": "a"} and key not in json.dumps(stored)
    listed = subprocess.run([*command[:4], "list", "--json", "--keys-file", str(tmp_path / "keys.json")],
                            capture_output=True, text=True, env=env, timeout=120, check=True)
    assert json.loads(listed.stdout)[0]["scope"] == "write" and key not in listed.stdout


def test_the_last_gate_drops_a_candidate_that_fails_the_plan_filter(tmp_path: Path, embedder):
    """Whatever a retriever fetched, only chunks passing the plan's filters become hits."""
    from ragloom.retrieve.base import Retrieved
    from ragloom.retrieve.pipeline import materialise
    from ragloom.stores.base import Candidate

    (tmp_path / "a.md").write_text("# A\n\nalpha text")
    (tmp_path / "b.md").write_text("# B\n\nbravo text")
    with Index.open(tmp_path / "index", Config(), embedder=embedder) as index:
        index.ingest([tmp_path / "a.md"], metadata={"team": "a"})
        index.ingest([tmp_path / "b.md"], metadata={"team": "b"})
        ids = [c.id for c in index.store.iter_chunks()]
        everything = Retrieved([Candidate(cid, 1.0) for cid in ids], {})
        gated = materialise(everything, 10, index.search_context(), parse_where({"team": "a"}))
        open_ = materialise(everything, 10, index.search_context())
    assert [h.metadata["team"] for h in gated] == ["a"]
    assert sorted(h.metadata["team"] for h in open_) == ["a", "b"]


@pytest.mark.parametrize("name", [".", "..", ".hidden", "-flag", "a/b", "", "x" * 65])
def test_a_key_name_that_could_be_a_path_is_refused_in_one_line(tmp_path: Path, name: str):
    keys = KeysFile(tmp_path / "keys.json")
    with pytest.raises(UsageError) as caught:
        keys.add(name)
    message = str(caught.value)
    assert "\n" not in message and "start with a letter or digit" in message
    assert not (tmp_path / "keys.json").exists()
    keys.add("team-a.v2_1")  # letters, digits, '.', '_' and '-' after the first


def test_an_old_key_named_like_a_path_gets_no_upload_folder(tmp_path: Path):
    """A keys file written before names were checked may hold a key named '..': its uploads would
    have gone to the shared upload folder; they are refused instead."""
    pytest.importorskip("fastapi")
    from ragloom.server.access import Caller, ScopedIndex, Served
    from ragloom.server.errors import ApiError

    served = Served("docs", None, None, tmp_path / "uploads")  # type: ignore[arg-type]
    assert ScopedIndex(served, Caller("team-a", "write", where={"team": "a"})).upload_dir() == (
        tmp_path / "uploads" / "keys" / "team-a")
    with pytest.raises(ApiError) as caught:
        ScopedIndex(served, Caller("..", "write", where={"team": "a"})).upload_dir()
    assert caught.value.status == 403 and "revoke the key" in str(caught.value)


def test_an_index_name_that_could_be_a_path_is_refused_in_one_line(tmp_path: Path):
    pytest.importorskip("fastapi")
    from ragloom.errors import ConfigError
    from ragloom.server.app import served_indexes

    for name in (".", "..", ".hidden", "a/b"):
        config = Config.from_dict({"server": {"indexes": {name: str(tmp_path / "x"), "docs": str(tmp_path / "d")}}})
        with pytest.raises(ConfigError) as caught:
            served_indexes(config)
        assert "\n" not in str(caught.value) and "never '.' or '..'" in str(caught.value)
