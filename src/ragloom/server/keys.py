"""Scoped API keys: a key store holding each key's hash, never the key.

``ragloom keys add NAME`` writes an entry (name, SHA-256 of the key, scopes, indexes, filter,
rate, creation time) and prints the key once; ``ragloom serve --keys-file WHERE`` reads the
store at every request (a file: again whenever it changes), so a revoked key stops working at
the next request. Keys are 256 random bits, so an unsalted SHA-256 cannot be reversed or guessed.

Two stores implement ``stores.keys.KeyStore``: ``KeysFile`` here (a JSON file; rate limits per
process) and, for ``--keys-file postgresql://...``, the database's key table
(``stores/postgres/keys.py``), which every replica over that database shares, rate limits included.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError
from ..stores.keys import KEY_NAME, KEY_PREFIX, SCOPES, KeyRecord, KeyStore, key_hash, new_key, widest

__all__ = ["KEY_NAME", "KEY_PREFIX", "SCOPES", "KeyRecord", "KeyStore", "KeysFile", "RateLimits", "key_hash", "new_key",
           "open_keys", "parse_key_where", "widest"]


def parse_key_where(expressions: Sequence[str]) -> dict[str, Any]:
    """``["team=a"]`` -> ``{"team": "a"}``: equalities only, since uploads are stamped with them."""
    from ..filters import parse_cli_filters

    where: dict[str, Any] = {}
    for expression in expressions:
        parsed = parse_cli_filters([expression])
        (key, spec), = parsed.items()
        if list(spec) != ["$eq"]:
            raise UsageError(f"--where {expression!r}: a key's filter is FIELD=VALUE (its uploads are stamped with it)")
        where[key] = spec["$eq"]
    return where


def open_keys(where: str | Path) -> KeyStore:
    """The key store ``--keys-file`` names: a database URL, or a JSON file."""
    from ..stores.location import is_remote

    if is_remote(where):
        from ..stores.postgres.keys import PostgresKeys

        return PostgresKeys(str(where))
    return KeysFile(where)


class KeysFile(KeyStore):
    """The keys file: read, changed atomically, and re-read when it changes on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._by_hash: dict[str, KeyRecord] = {}
        self._rates = RateLimits()  # this process's buckets

    # -- reading -------------------------------------------------------------------------------------
    def records(self) -> list[KeyRecord]:
        if not self.path.exists():
            return []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [KeyRecord.from_json(item) for item in raw.get("keys", [])]
        except (OSError, ValueError, KeyError, TypeError, UsageError) as exc:
            raise ConfigError(f"cannot read the keys file {self.path}: {exc}; fix it or recreate it with "
                              "`ragloom keys add`") from exc

    def lookup(self, presented: str) -> KeyRecord | None:
        """The record of a presented key, from the file as it is now (re-read when it changed)."""
        self._refresh()
        return self._by_hash.get(key_hash(presented))

    def names(self) -> set[str]:
        self._refresh()
        return {r.name for r in self._by_hash.values()}

    def take(self, name: str, rate: float, burst: int) -> float:
        return self._rates.take(name, rate, burst)

    def _refresh(self) -> None:
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = (0, 0)
        with self._lock:
            if stamp != self._stamp:
                # A broken file keeps nobody in: an empty ring refuses every key until it is fixed.
                try:
                    self._by_hash = {r.hash: r for r in self.records()}
                except ConfigError:
                    self._by_hash = {}
                self._stamp = stamp

    # -- changing ------------------------------------------------------------------------------------
    def add(self, name: str, *, scopes: Sequence[str] = (), indexes: Sequence[str] = (),
            where: Mapping[str, Any] | None = None, rate: float | None = None, burst: int | None = None,
            ) -> tuple[str, KeyRecord]:
        """A new key and its record (written to the file); the key itself is stored nowhere."""
        records = self.records()
        key, record = new_key(name, records, scopes=scopes, indexes=indexes, where=where, rate=rate, burst=burst)
        self._write([*records, record])
        return key, record

    def revoke(self, name: str) -> None:
        records = self.records()
        if not any(r.name == name for r in records):
            raise UsageError(f"no key named {name!r} in {self.path}; see `ragloom keys list`")
        self._write([r for r in records if r.name != name])

    def _write(self, records: list[KeyRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".keys-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"keys": [r.to_json() for r in records]}, out, indent=2)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class RateLimits:
    """One token bucket per key name: ``rate`` tokens a second, at most ``burst`` saved up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (tokens, when)

    def take(self, name: str, rate: float, burst: int) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, then = self._buckets.get(name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - then) * rate)
            if tokens >= 1.0:
                self._buckets[name] = (tokens - 1.0, now)
                return 0.0
            self._buckets[name] = (tokens, now)
            return (1.0 - tokens) / rate
