"""Who may do what, in one place: every HTTP route and MCP tool goes through ``Gate`` and ``ScopedIndex``.

A request's key resolves to a ``Caller`` (its name, widest scope, indexes and filter). The caller
opens one served index as a ``ScopedIndex``: a view of the index that ANDs the caller's filter to
every read (hits, context, answers and their citations, sources, a source's text, the audit
log, ingest jobs) and stamps the caller's filter fields on what it uploads. An index the caller
may not use answers exactly as one that does not exist.
"""

from __future__ import annotations

import dataclasses
import hmac
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..audit import CALLER
from ..config import ServerConfig
from ..filters import all_of, matches, parse_where
from ..stores.base import AuditEntry, sources_matching
from ..types import Answer, Hit, IndexStats, SourceRecord
from .errors import ApiError
from .keys import KEY_NAME, SCOPES, KeyStore
from .security import API_KEY_ENV
from .service import IndexService

if TYPE_CHECKING:
    from .jobs import IngestJobs

#: How far back a key that is not an admin looks for its own audit entries.
_AUDIT_SCAN = 2000


@dataclass(frozen=True)
class Caller:
    """Who a request is: a key's name (None without a key), its widest scope, indexes and filter."""

    name: str | None
    scope: str = "read"
    indexes: tuple[str, ...] = ()  # empty: every index
    where: Mapping[str, Any] = field(default_factory=dict)

    def may(self, scope: str) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(scope)

    def may_use(self, index: str) -> bool:
        return not self.indexes or index in self.indexes

    @property
    def filtered(self) -> bool:
        return bool(self.where)


ANONYMOUS = Caller(None, "read")
#: A key that is not known, where reads are open: it reads as nobody, and is told it is wrong when it writes.
WRONG_KEY = Caller(None, "read")
ADMIN = Caller(API_KEY_ENV, "admin")


def index_not_found(name: str) -> ApiError:
    """The one answer for an index that does not exist and for one the caller may not use."""
    return ApiError(404, "index_not_found", f"no index named {name!r}; list yours with GET /v1/indexes")


class Gate:
    """Resolves a presented key to a Caller: the admin key ($RAGLOOM_API_KEY), a scoped key of
    the key store (a file re-read when it changes, or a database), or nobody; counts each key's
    requests against its rate in the key store's buckets."""

    def __init__(self, settings: ServerConfig, admin_key: str | None, keys: KeyStore | None) -> None:
        self.settings, self.admin_key, self.keys = settings, admin_key, keys

    @property
    def keys_required(self) -> bool:
        return self.keys is not None or self.settings.require_key_for_reads

    def caller(self, presented: str | None) -> Caller:
        if presented is None:
            if self.keys_required and (self.keys is not None or self.admin_key is not None):
                raise ApiError(401, "unauthorized", "send the API key as `Authorization: Bearer KEY` or `X-API-Key: KEY`")
            return ANONYMOUS
        if self.admin_key is not None and hmac.compare_digest(presented.encode("utf-8"), self.admin_key.encode("utf-8")):
            return ADMIN
        record = self.keys.lookup(presented) if self.keys is not None else None
        if record is None:
            if not self.keys_required:  # reads are open: a wrong key reads as nobody, and may not write
                return WRONG_KEY
            raise ApiError(401, "unauthorized", "the API key is wrong or has been revoked")
        if record.rate:
            wait = self.keys.take(record.name, record.rate, record.burst)  # type: ignore[union-attr]
            if wait > 0:
                error = ApiError(429, "rate_limited", f"the key {record.name!r} is over its rate of {record.rate:g} "
                                 "requests a second; wait and retry")
                error.headers = {"Retry-After": str(max(1, math.ceil(wait)))}
                raise error
        return Caller(record.name, record.scope, record.indexes, dict(record.where))

    def check(self, caller: Caller, index: str, known: Mapping[str, Any], scope: str) -> None:
        """404 for an index unknown or not the caller's; then 401/403 for a scope it lacks."""
        if index not in known or not caller.may_use(index):
            raise index_not_found(index)
        if caller.may(scope):
            return
        if caller.name is None:
            if self.admin_key is None and self.keys is None:
                raise ApiError(403, "writes_disabled", f"this server accepts no writes: set {API_KEY_ENV} (or "
                               "server.api_key) or give it a keys file (--keys-file), and restart it")
            if caller is WRONG_KEY:
                raise ApiError(401, "unauthorized", "the API key is wrong or has been revoked")
            raise ApiError(401, "unauthorized", "send the API key as `Authorization: Bearer KEY` or `X-API-Key: KEY`")
        raise ApiError(403, "forbidden", f"the key {caller.name!r} may {caller.scope}; this needs the {scope} scope")


@dataclass
class Served:
    """One index a server serves: its service, ingest jobs and upload folder."""

    name: str
    service: IndexService
    jobs: IngestJobs
    upload_dir: Any  # Path


class ScopedIndex:
    """One served index as one caller may see it. Its methods block: run them on a worker thread."""

    def __init__(self, served: Served, caller: Caller) -> None:
        self.served, self.caller = served, caller
        self.name, self.service = served.name, served.service
        self._conditions = parse_where(caller.where)

    # -- reads -------------------------------------------------------------------------------------
    def where(self, asked: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The request's filter ANDed with the caller's: no operator in the request can widen it."""
        return all_of(asked, self.caller.where)

    def sees(self, metadata: Mapping[str, Any]) -> bool:
        return matches(metadata, self._conditions)

    def search(self, query: str, k: int | None = None, *, where: Mapping[str, Any] | None = None, **options: Any) -> Any:
        with self.as_caller():
            return self.service.search(query, k, where=self.where(where), **options)

    def context(self, question: str, *, where: Mapping[str, Any] | None = None, **options: Any) -> Any:
        with self.as_caller():
            return self.service.context(question, where=self.where(where), **options)

    def ask_stream(self, question: str, *, where: Mapping[str, Any] | None = None, **options: Any,
                   ) -> Iterator[str | Answer]:
        """The answer's pieces; every step of it (retrieval, a strategy's own searches) runs as the caller."""
        pieces = self.service.ask_stream(question, where=self.where(where), **options)
        try:
            while True:
                with self.as_caller():
                    piece = next(pieces, None)
                if piece is None:
                    return
                yield piece
        finally:
            pieces.close()

    def ask(self, question: str, **options: Any) -> Answer:
        answer = None
        for piece in self.ask_stream(question, **options):
            answer = piece
        assert isinstance(answer, Answer), "ask_stream ended without an Answer"
        return answer

    def sources(self) -> list[SourceRecord]:
        with self.service.reader() as index:
            return sources_matching(index.store, self._conditions)

    def source(self, sid: str) -> SourceRecord:
        """The source ``sid``; one the caller may not see is not found, exactly as one that does not
        exist. Only that source's chunks are read, not every source's as ``sources`` must."""
        record = self.service.source(sid)
        visible = not self._conditions or self._sees_source(record.path)
        return self.service.source(sid, among=[record] if visible else [])

    def _sees_source(self, path: str) -> bool:
        with self.service.reader() as index:
            return any(self.sees(chunk.metadata) for chunk in index.store.source_chunks(path))

    def source_text(self, sid: str) -> tuple[SourceRecord, list[Hit]]:
        self.source(sid)  # 404 for a source the caller cannot see, as for one that does not exist
        record, hits = self.service.source_text(sid)
        return record, [h for h in hits if self.sees(h.metadata)]

    def audit(self, last: int) -> list[AuditEntry]:
        """Every entry for an admin; only the caller's own searches for any other key."""
        if self.caller.may("admin") or (self.caller.name is None and not self.caller.filtered):
            return self.service.audit(last)
        entries = self.service.audit(max(last, _AUDIT_SCAN))
        return [e for e in entries if e.parameters.get("key") == self.caller.name][:last]

    def stats(self) -> IndexStats:
        stats = self.service.stats()
        if not self.caller.filtered:
            return stats
        visible = self.sources()
        return dataclasses.replace(stats, sources=len(visible), chunks=sum(r.chunk_count for r in visible))

    # -- writes ------------------------------------------------------------------------------------
    def remove_source(self, sid: str) -> list[str]:
        record = self.source(sid)  # a source the caller cannot see does not exist for it
        if self._conditions and not self._owns_source(record.path):
            raise ApiError(403, "forbidden", f"the source {sid!r} holds passages the key {self.caller.name!r} may not "
                           "read, so it may not delete it; ask a key that reads all of it (an admin)")
        return self.service.remove_source(sid)

    def _owns_source(self, path: str) -> bool:
        """Whether every chunk of the source passes the caller's filter (what a filtered key may delete)."""
        with self.service.reader() as index:
            return all(self.sees(chunk.metadata) for chunk in index.store.source_chunks(path))

    @property
    def owner(self) -> object:
        """Whose ingest jobs the caller sees: everybody's (``all``) for an admin, else its own."""
        return all if self.caller.may("admin") or self.caller.name is None else self.caller.name

    @property
    def stamp(self) -> dict[str, Any]:
        """Metadata stamped on what the caller ingests: its filter's fields, so it can see them."""
        return dict(self.caller.where)

    def upload_dir(self) -> Any:
        """A filtered key's uploads go to a folder of its own: two tenants' ``notes.md`` stay two files."""
        base = self.served.upload_dir
        if not (self.caller.filtered and self.caller.name):
            return base
        if not KEY_NAME.fullmatch(self.caller.name):  # a keys file written before names were checked
            raise ApiError(403, "forbidden", f"the key name {self.caller.name!r} cannot name an upload folder; "
                           "revoke the key and add it again under a name of letters and digits")
        return base / "keys" / self.caller.name

    @contextmanager
    def as_caller(self) -> Iterator[None]:
        """Searches made inside are audited under the caller's key name."""
        token = CALLER.set(self.caller.name)
        try:
            yield
        finally:
            CALLER.reset(token)

