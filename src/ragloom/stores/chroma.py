"""ChromaDB store: a persistent embedded client, or the HTTP client of a Chroma server.

Each chunk is one record of a cosine HNSW collection: the chunk id, its unit vector,
its text as the document, and its metadata. Chroma holds str, int, float, bool and
lists of one of those; other values (nested mappings, mixed lists) are kept only in
an exact JSON copy of the chunk's fields (``_rl_fields``), and filters on such keys are
checked after the search instead of by Chroma. Sources registry, audit log and BM25
live beside the collection (see ``vectordb``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..errors import ServiceUnavailableError, StoreError
from ..filters import Condition
from ..optional import require
from ..types import Chunk
from .chroma_options import ChromaStoreConfig
from .vectordb import Neighbour, VectorDBStore, chunk_from_fields, encode_fields, unit_rows

_FIELDS, _SOURCE, _HASH = "_rl_fields", "_rl_source", "_rl_hash"
_RESERVED_PREFIX = "_rl_"
_KEYS_META = "chroma_keys"
_OMIT, _OPAQUE = object(), object()
_INT64 = 2**63


class ChromaStore(VectorDBStore):
    name = "chroma"
    Options = ChromaStoreConfig  # store.chroma

    def __init__(self, path: Path, config: Config, read_only: bool = False) -> None:
        settings = config.store.chroma
        super().__init__(path / "chroma", threads=config.embedder.threads, read_only=read_only,
                         catalog_url=settings.catalog)
        self.data_dir = None if settings.host else Path(settings.path or self.folder / "data").expanduser()
        self.client = _connect(settings, self.data_dir)
        self.collection = self.client.get_or_create_collection(
            settings.collection, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        space = (self.collection.configuration_json.get("hnsw") or {}).get("space", "cosine")
        if space != "cosine":
            raise StoreError(
                f"Chroma collection {settings.collection!r} measures {space} distance; ragloom needs cosine — "
                "choose another store.chroma.collection"
            )
        self._batch = int(self.client.get_max_batch_size())
        keys = self.catalog.get_meta(_KEYS_META) or {}
        self._list_keys: set[str] = set(keys.get("list", []))
        self._opaque_keys: set[str] = set(keys.get("opaque", []))
        self._after_connect()

    @classmethod
    def open(cls, path: Path, config: Config, read_only: bool = False) -> ChromaStore:
        return cls(path, config, read_only=read_only)

    # -- writing ------------------------------------------------------------------------------
    def _prepare(self, chunks: Sequence[Chunk]) -> None:
        lists, opaque = set(self._list_keys), set(self._opaque_keys)
        for chunk in chunks:
            for key, value in chunk.metadata.items():
                native = native_value(value)
                if native is _OPAQUE or key.startswith(_RESERVED_PREFIX):
                    opaque.add(key)
                elif isinstance(native, list):
                    lists.add(key)
        if lists != self._list_keys or opaque != self._opaque_keys:
            # Recorded before the records exist, so a filter never trusts Chroma on them too early.
            with self.catalog.transaction():
                self.catalog.set_meta(_KEYS_META, {"list": sorted(lists), "opaque": sorted(opaque)})
            self._list_keys, self._opaque_keys = lists, opaque

    def _upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        vectors = unit_rows(vectors)
        for start in range(0, len(chunks), self._batch):
            part = chunks[start : start + self._batch]
            self.collection.upsert(
                ids=[c.id for c in part],
                embeddings=vectors[start : start + len(part)],
                documents=[c.text for c in part],
                metadatas=[_record_metadata(c) for c in part],
            )

    def _remove(self, chunk_ids: Sequence[str]) -> None:
        for start in range(0, len(chunk_ids), self._batch):
            self.collection.delete(ids=list(chunk_ids[start : start + self._batch]))

    # -- reading ------------------------------------------------------------------------------
    def _ids_of_source(self, source: str) -> list[str]:
        return list(self.collection.get(where={_SOURCE: source}, include=[])["ids"])

    def _load(self, chunk_ids: Sequence[str], vectors: bool) -> dict[str, tuple[Chunk, np.ndarray | None]]:
        include = ["documents", "metadatas", "embeddings"] if vectors else ["documents", "metadatas"]
        found: dict[str, tuple[Chunk, np.ndarray | None]] = {}
        for start in range(0, len(chunk_ids), self._batch):
            got = self.collection.get(ids=list(chunk_ids[start : start + self._batch]), include=include)
            embeddings = got["embeddings"] if vectors else None
            for i, cid in enumerate(got["ids"]):
                chunk = chunk_from_fields(cid, got["documents"][i] or "", json.loads(got["metadatas"][i][_FIELDS]))
                vector = np.asarray(embeddings[i], dtype=np.float32) if embeddings is not None else None
                found[cid] = (chunk, vector)
        return found

    def _nearest(self, vector: np.ndarray, n: int, native: Any, want_metadata: bool) -> list[Neighbour]:
        include = ["embeddings", "metadatas"] if want_metadata else ["embeddings"]
        got = self.collection.query(query_embeddings=[vector], n_results=n, where=native, include=include)
        ids, vectors = got["ids"][0], got["embeddings"][0]
        metas = got["metadatas"][0] if want_metadata else [None] * len(ids)
        return [
            (cid, np.asarray(v, dtype=np.float32), json.loads(m[_FIELDS])["metadata"] if m else None)
            for cid, v, m in zip(ids, vectors, metas)
        ]

    def _vectors_by_hash(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(content_hashes), 500):
            part = list(content_hashes[start : start + 500])
            got = self.collection.get(where={_HASH: {"$in": part}}, include=["embeddings", "metadatas"])
            for meta, vector in zip(got["metadatas"], got["embeddings"]):
                found[meta[_HASH]] = np.asarray(vector, dtype=np.float32)
        return found

    def _scan(self) -> Iterator[list[Chunk]]:
        offset = 0
        while True:
            got = self.collection.get(limit=self._batch, offset=offset, include=["documents", "metadatas"])
            if not got["ids"]:
                return
            yield [
                chunk_from_fields(cid, doc or "", json.loads(meta[_FIELDS]))
                for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"])
            ]
            offset += len(got["ids"])

    def _count(self) -> int:
        return int(self.collection.count())

    # -- filters ------------------------------------------------------------------------------
    def _translate(self, conditions: Sequence[Condition]) -> tuple[Any, list[Condition]]:
        clauses, residual = [], []
        for condition in conditions:
            clause = None if condition.key in self._opaque_keys else chroma_clause(
                condition, listy=condition.key in self._list_keys
            )
            if clause is None:
                residual.append(condition)
            else:
                clauses.append(clause)
        return _all_of(clauses), residual

    def close(self) -> None:
        # Releases Chroma's shared system: its SQLite files (local) or its HTTP connections.
        close = getattr(self.client, "close", None)  # chromadb >= 1.1
        if close is not None:
            close()
        super().close()


def _connect(settings: ChromaStoreConfig, data_dir: Path | None) -> Any:
    chromadb = require("chromadb", extra="chroma", feature="the chroma store")
    quiet = chromadb.config.Settings(anonymized_telemetry=False)
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(data_dir), settings=quiet)
    try:
        return chromadb.HttpClient(
            host=settings.host, port=settings.port, ssl=settings.ssl, headers=settings.headers or None, settings=quiet
        )
    except Exception as exc:  # chromadb raises plain ValueError/ConnectionError here
        scheme = "https" if settings.ssl else "http"
        raise ServiceUnavailableError(
            f"Chroma is not reachable at {scheme}://{settings.host}:{settings.port} ({exc}) — start it with "
            "`chroma run --path DIR --port PORT`, or unset store.chroma.host to use a local directory"
        ) from None


def _record_metadata(chunk: Chunk) -> dict[str, Any]:
    metadata: dict[str, Any] = {_FIELDS: encode_fields(chunk), _SOURCE: chunk.source, _HASH: chunk.content_hash}
    for key, value in chunk.metadata.items():
        native = native_value(value)
        if native is not _OMIT and native is not _OPAQUE and not key.startswith(_RESERVED_PREFIX):
            metadata[key] = native
    return metadata


def native_value(value: Any) -> Any:
    """How Chroma holds a metadata value: as is, _OMIT (absent), or _OPAQUE (it cannot).

    None and the empty list are stored as absent: for both, only ``$ne`` holds, which
    is also what Chroma answers for a missing key.
    """
    if value is None:
        return _OMIT
    if isinstance(value, (list, tuple)):
        if not value:
            return _OMIT
        kinds = {_kind(item) for item in value}
        return list(value) if len(kinds) == 1 and None not in kinds else _OPAQUE
    return value if _kind(value) is not None else _OPAQUE


def _kind(value: Any) -> type | None:
    """The Chroma type of a scalar, or None if Chroma cannot hold it faithfully."""
    if isinstance(value, (bool, str)):
        return type(value)
    if isinstance(value, int):
        return int if -_INT64 <= value < _INT64 else None
    if isinstance(value, float):
        return float if math.isfinite(value) else None
    return None


def chroma_clause(condition: Condition, listy: bool) -> dict[str, Any] | None:
    """Chroma ``where`` for one condition, exact with respect to ``filters.matches``; None if none is.

    Checked against Chroma 1.5: ``$eq`` and ``$ne`` compare 1 and 1.0 as equal but never
    a number with a bool; ``$ne`` holds for a missing key; ``$eq`` does not look inside
    lists, ``$contains`` does (type-strict); ranges take numbers only.
    """
    key, op, value = condition.key, condition.op, condition.value
    if op == "$contains":  # Chroma's $contains is list membership, not "text contains": checked after
        return None
    if op == "$eq":
        return _equals(key, value, listy)
    if op == "$in":
        options = [_equals(key, v, listy) for v in value]
        return None if any(o is None for o in options) else _any_of(options)
    if listy:  # "all elements differ" and ranges over elements have no Chroma form
        return None
    if op == "$ne":
        return {key: {"$ne": value}} if _kind(value) is not None else None
    if isinstance(value, bool) or _kind(value) not in (int, float):
        return None
    return {key: {op: value}}


def _equals(key: str, value: Any, listy: bool) -> dict[str, Any] | None:
    kind = _kind(value)
    if kind is None:
        return None
    options: list[dict[str, Any]] = [{key: {"$eq": value}}]
    if listy:
        if kind in (int, float):
            number = float(value)
            variants = [int(number), number] if number.is_integer() and abs(number) < _INT64 else [number]
            options += [{key: {"$contains": v}} for v in variants]
        else:
            options.append({key: {"$contains": value}})
    return _any_of(options)


def _any_of(options: list[dict[str, Any]]) -> dict[str, Any]:
    return options[0] if len(options) == 1 else {"$or": options}


def _all_of(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
