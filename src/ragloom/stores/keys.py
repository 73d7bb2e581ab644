"""The key store role: a server's scoped API keys (hashes, never keys) and their rate buckets.

``KeyStore`` is what the server asks; ``server/keys.py`` keeps them in a JSON file,
``stores/postgres/keys.py`` in the database that several replicas share.
"""

from __future__ import annotations

import hashlib
import re
import math
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import UsageError

#: Each scope includes the ones before it: write may also read, admin may do everything.
SCOPES = ("read", "write", "admin")
KEY_PREFIX = "rlk_"
#: A key's name: it names the key's upload folder and audit entries, so never a path (``.``, ``..``).
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def widest(scopes: Sequence[str]) -> str:
    """The widest of the scopes given (``read`` when none is)."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise UsageError(f"unknown scope {unknown[0]!r}; use one of: {', '.join(SCOPES)}")
    return max(scopes, key=SCOPES.index) if scopes else "read"


@dataclass(frozen=True)
class KeyRecord:
    """One key as the keys file holds it."""

    name: str
    hash: str
    scope: str = "read"
    indexes: tuple[str, ...] = ()  # empty: every index
    where: dict[str, Any] = field(default_factory=dict)  # field -> value, ANDed to every read
    rate: float | None = None  # requests a second (token bucket); None: no limit
    burst: int = 0
    created_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "indexes": list(self.indexes)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> KeyRecord:
        return cls(name=str(raw["name"]), hash=str(raw["hash"]), scope=widest([raw.get("scope", "read")]),
                   indexes=tuple(raw.get("indexes") or ()), where=dict(raw.get("where") or {}),
                   rate=raw.get("rate"), burst=int(raw.get("burst") or 0), created_at=float(raw.get("created_at", 0)))


def new_key(name: str, existing: Sequence[KeyRecord], *, scopes: Sequence[str] = (), indexes: Sequence[str] = (),
            where: Mapping[str, Any] | None = None, rate: float | None = None, burst: int | None = None,
            ) -> tuple[str, KeyRecord]:
    """A new key and its record, checked against the keys there are (the key is stored nowhere)."""
    if not KEY_NAME.fullmatch(name):
        raise UsageError(f"key name {name!r}: start with a letter or digit, then up to 63 letters, digits, '.', "
                         "'_' and '-' (it names the key's upload folder, so never a path like '.' or '..')")
    if rate is not None and rate <= 0:
        raise UsageError(f"--rate {rate}: give a positive number of requests a second")
    if any(r.name == name for r in existing):
        raise UsageError(f"a key named {name!r} exists; revoke it first or choose another name")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    record = KeyRecord(name=name, hash=key_hash(key), scope=widest(list(scopes)), indexes=tuple(indexes),
                       where=dict(where or {}), rate=rate,
                       burst=burst or (max(1, math.ceil(rate)) if rate else 0), created_at=time.time())
    return key, record


class KeyStore(ABC):
    """Where a server's scoped keys live, and their rate limits' buckets."""

    @abstractmethod
    def records(self) -> list[KeyRecord]: ...

    @abstractmethod
    def lookup(self, presented: str) -> KeyRecord | None:
        """The record of a presented key as the store holds it now (a revoked key: None)."""

    @abstractmethod
    def add(self, name: str, *, scopes: Sequence[str] = (), indexes: Sequence[str] = (),
            where: Mapping[str, Any] | None = None, rate: float | None = None, burst: int | None = None,
            ) -> tuple[str, KeyRecord]: ...

    @abstractmethod
    def revoke(self, name: str) -> None: ...

    @abstractmethod
    def take(self, name: str, rate: float, burst: int) -> float:
        """One request of key ``name`` against its bucket: 0 when it may go ahead, else the seconds until it may."""

    def names(self) -> set[str]:
        return {r.name for r in self.records()}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
