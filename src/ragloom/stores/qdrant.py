"""Qdrant store: local mode (``QdrantClient(path=...)``) or a server/cluster (``url``, ``api_key``).

Each chunk is one point of a cosine collection. Point ids are UUIDs derived from
chunk ids (Qdrant takes only integers and UUIDs); the payload holds ``chunk_id``,
``text``, ``source``, ``content_hash``, ``metadata`` (filtered as ``metadata.<key>``)
and ``chunk`` (the remaining chunk fields). Qdrant matches list payloads element-wise,
as ragloom's filter language does, so nearly every filter runs inside Qdrant.
Sources registry and audit log live beside the collection (see ``vectordb``). BM25 is
computed by Qdrant: each point also holds a sparse vector named ``bm25`` of its terms' BM25
weights, which Qdrant scores with the IDF it keeps over the collection (``sparse_bm25``); a
collection created with ``store.qdrant.lexical: local`` (or before this existed) keeps ragloom's
tantivy index beside it instead.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..errors import AuthenticationError, ServiceUnavailableError, StoreError
from ..filters import Condition
from ..optional import require
from ..types import Chunk
from .base import Candidate
from .qdrant_options import QdrantStoreConfig
from .sparse_bm25 import AVGDL_META, FAMILIES_META, SparseBM25, mean_length
from .vectordb import Neighbour, Row, VectorDBStore, chunk_fields, chunk_from_fields, gather, unit_rows

#: Namespace of the UUIDs that stand for chunk ids (uuid5 of the chunk id in it).
POINT_NAMESPACE = uuid.UUID("6f1d6c3e-4b1e-5a8e-9a57-72616731f0f0")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")  # keys Qdrant's path syntax reads literally
_BATCH = 256
#: The name of each point's sparse BM25 vector (the dense vector is the unnamed one).
SPARSE = "bm25"


def point_id(chunk_id: str) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, chunk_id))


class QdrantStore(VectorDBStore):
    name = "qdrant"
    Options = QdrantStoreConfig  # store.qdrant

    def __init__(self, path: Path, config: Config, read_only: bool = False) -> None:
        settings = config.store.qdrant
        super().__init__(path / "qdrant", threads=config.embedder.threads, read_only=read_only,
                         catalog_url=settings.catalog)
        self.data_dir = None if settings.url else Path(settings.path or self.folder / "data").expanduser()
        self.local = self.data_dir is not None
        self.collection = settings.collection
        self.client = _connect(settings, self.data_dir)
        from qdrant_client import models

        self.models = models
        self._ready = self.client.collection_exists(self.collection)
        server_bm25 = settings.lexical == "server"
        if self._ready:
            self._check_distance()
            server_bm25 = SPARSE in (self.client.get_collection(self.collection).config.params.sparse_vectors or {})
        self.abilities = dataclasses.replace(self.abilities, server_bm25=server_bm25)
        self._sparse: SparseBM25 | None = None
        self._after_connect()

    @classmethod
    def open(cls, path: Path, config: Config, read_only: bool = False) -> QdrantStore:
        return cls(path, config, read_only=read_only)

    def _check_distance(self) -> None:
        params = self.client.get_collection(self.collection).config.params.vectors
        distance = getattr(params, "distance", None)
        if distance is not None and distance != self.models.Distance.COSINE:
            raise StoreError(
                f"Qdrant collection {self.collection!r} uses {distance} distance; ragloom needs cosine — "
                "choose another store.qdrant.collection"
            )

    def _create(self, dimension: int) -> None:
        m = self.models
        sparse = {SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)} if self.abilities.server_bm25 else None
        self.client.create_collection(
            self.collection, vectors_config=m.VectorParams(size=dimension, distance=m.Distance.COSINE),
            sparse_vectors_config=sparse,
        )
        if not self.local:  # local mode scans payloads anyway; a server wants them indexed
            for field in ("source", "content_hash"):
                self.client.create_payload_index(self.collection, field, m.PayloadSchemaType.KEYWORD)
        self._ready = True

    # -- writing ------------------------------------------------------------------------------
    def _upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if not self._ready:
            self._create(int(vectors.shape[1]))
        vectors = unit_rows(vectors)
        sparse = self._bm25(chunks) if self.abilities.server_bm25 else None
        if sparse is not None:
            self._note_families(sparse.families(chunks))
        for start in range(0, len(chunks), _BATCH):
            part = chunks[start : start + _BATCH]
            dense = vectors[start : start + len(part)].tolist()
            self.client.upsert(
                self.collection,
                points=self.models.Batch(
                    ids=[point_id(c.id) for c in part],
                    vectors=dense if sparse is None else {"": dense, SPARSE: [
                        self.models.SparseVector(indices=i, values=v) for i, v in map(sparse.document, part)]},
                    payloads=[_payload(c) for c in part],
                ),
                wait=True,
            )

    def _note_families(self, families: set[str]) -> None:
        """Record language families not seen before (a query is read by every recorded one)."""
        known = set(self.catalog.get_meta(FAMILIES_META) or [])
        if families <= known:
            return
        with self.catalog.transaction():
            known = set(self.catalog.get_meta(FAMILIES_META) or [])
            self.catalog.set_meta(FAMILIES_META, sorted(known | families))

    def _bm25(self, first: Sequence[Chunk]) -> SparseBM25:
        """The sparse BM25 model; its mean chunk length is fixed by the first chunks ever written
        (recorded in the catalog, so every replica and every later write uses the same one)."""
        if self._sparse is None:
            avgdl = self.catalog.get_meta(AVGDL_META)
            if avgdl is None and first:
                with self.catalog.transaction():  # two first writers: the one that commits first wins
                    avgdl = self.catalog.get_meta(AVGDL_META)
                    if avgdl is None:
                        avgdl = round(mean_length(SparseBM25(), first), 3)
                        self.catalog.set_meta(AVGDL_META, avgdl)
            if avgdl is None:
                return SparseBM25()  # nothing written yet: a query meets an empty collection
            self._sparse = SparseBM25(float(avgdl))
        return self._sparse

    def _remove(self, chunk_ids: Sequence[str]) -> None:
        if not self._ready:
            return
        for start in range(0, len(chunk_ids), _BATCH):
            ids = [point_id(cid) for cid in chunk_ids[start : start + _BATCH]]
            self.client.delete(self.collection, points_selector=self.models.PointIdsList(points=ids), wait=True)

    # -- reading ------------------------------------------------------------------------------
    def _ids_of_source(self, source: str) -> list[str]:
        return [p.payload["chunk_id"] for p in self._scroll(_match("source", source), ["chunk_id"], False)]

    def _load(self, chunk_ids: Sequence[str], vectors: bool) -> dict[str, tuple[Chunk, np.ndarray | None]]:
        found: dict[str, tuple[Chunk, np.ndarray | None]] = {}
        if not self._ready:
            return found
        for start in range(0, len(chunk_ids), _BATCH):
            ids = [point_id(cid) for cid in chunk_ids[start : start + _BATCH]]
            for point in self.client.retrieve(self.collection, ids, with_payload=True,
                                              with_vectors=self._dense_only if vectors else False):
                chunk = _chunk(point.payload)
                found[chunk.id] = (chunk, _dense(point.vector) if vectors else None)
        return found

    def _nearest(self, vector: np.ndarray, n: int, native: Any, want_metadata: bool) -> list[Neighbour]:
        if not self._ready:
            return []
        fields = ["chunk_id", "metadata"] if want_metadata else ["chunk_id"]
        points = self.client.query_points(
            self.collection, query=vector.tolist(), limit=n, query_filter=native, with_payload=fields,
            with_vectors=self._dense_only,
        ).points
        return [
            (p.payload["chunk_id"], _dense(p.vector),
             p.payload.get("metadata", {}) if want_metadata else None)
            for p in points
        ]

    def _vectors_by_hash(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(content_hashes), _BATCH):
            part = list(content_hashes[start : start + _BATCH])
            condition = self.models.FieldCondition(key="content_hash", match=self.models.MatchAny(any=part))
            for point in self._scroll(self.models.Filter(must=[condition]), ["content_hash"], True):
                found[point.payload["content_hash"]] = _dense(point.vector)
        return found

    def _scan(self) -> Iterator[list[Chunk]]:
        for points in self._pages(None, True, False):
            yield [_chunk(p.payload) for p in points]

    def _scroll(self, where: Any, fields: list[str], vectors: bool) -> list[Any]:
        return [point for points in self._pages(where, fields, vectors) for point in points]

    def _pages(self, where: Any, payload: bool | list[str], vectors: bool) -> Iterator[list[Any]]:
        """The points matching ``where``, a page of up to 1,024 at a time."""
        if not self._ready:
            return
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.collection, scroll_filter=where, limit=1024, offset=offset,
                with_payload=payload, with_vectors=self._dense_only if vectors else False,
            )
            if points:
                yield points
            if offset is None:
                return

    def _count(self) -> int:
        return int(self.client.count(self.collection, exact=True).count) if self._ready else 0

    @property
    def _dense_only(self) -> bool | list[str]:
        """What to ask for to get a point's dense vector alone (not its sparse BM25 one)."""
        return [""] if self.abilities.server_bm25 else True

    # -- BM25 in Qdrant ------------------------------------------------------------------------
    def search_lexical(self, query: str, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        if not self.abilities.server_bm25:
            return super().search_lexical(query, k, conditions)
        families = self.catalog.get_meta(FAMILIES_META) or ["en"]
        indices, values = self._bm25(()).query(query, families)
        if k <= 0 or not indices or not self._ready:
            return []
        native, residual = self._translate(conditions)
        sparse = self.models.SparseVector(indices=indices, values=values)
        fields = ["chunk_id", "metadata"] if residual else ["chunk_id"]

        def fetch(n: int) -> list[Row]:
            points = self.client.query_points(
                self.collection, query=sparse, using=SPARSE, limit=n, query_filter=native, with_payload=fields,
            ).points
            return [(p.payload["chunk_id"], float(p.score), p.payload.get("metadata", {}) if residual else None)
                    for p in points if p.score > 0]

        return gather(fetch, k, residual, self._count())

    # -- filters ------------------------------------------------------------------------------
    def _translate(self, conditions: Sequence[Condition]) -> tuple[Any, list[Condition]]:
        must, must_not, residual = [], [], []
        for condition in conditions:
            clause = qdrant_clause(self.models, condition) if _PLAIN_KEY.match(condition.key) else None
            if clause is None:
                residual.append(condition)
            elif condition.op == "$ne":
                must_not.append(clause)
            else:
                must.append(clause)
        native = self.models.Filter(must=must or None, must_not=must_not or None) if must or must_not else None
        return native, residual

    def close(self) -> None:
        self.client.close()
        super().close()


def qdrant_clause(models: Any, condition: Condition) -> Any | None:
    """A Qdrant condition for ``condition`` (for ``$ne``: the one to exclude); None if none is exact.

    Checked against qdrant-client 1.20 local mode: a list payload matches when any
    element does, so ``must_not`` of "equals v" is "every element differs", which is
    ragloom's ``$ne``; a missing key passes ``must_not`` and fails everything else.
    Numbers are compared with a closed range so 1 and 1.0 are equal; bools and strings
    by ``match``. Ranges over strings have no Qdrant form.
    """
    key, op, value = "metadata." + condition.key, condition.op, condition.value
    if op == "$contains":  # MatchText needs a full-text index and tokenises: checked after the search
        return None
    if op in ("$eq", "$ne"):
        return _equals(models, key, value)
    if op == "$in":
        if all(isinstance(v, str) for v in value):
            return models.FieldCondition(key=key, match=models.MatchAny(any=list(value)))
        options = [_equals(models, key, v) for v in value]
        return None if any(o is None for o in options) else models.Filter(should=options)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    bound = {"$lt": "lt", "$lte": "lte", "$gt": "gt", "$gte": "gte"}[op]
    return models.FieldCondition(key=key, range=models.Range(**{bound: value}))


def _equals(models: Any, key: str, value: Any) -> Any | None:
    if isinstance(value, (bool, str)):
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))
    if isinstance(value, (int, float)):
        return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
    return None


class Serialized:
    """A local-mode client whose calls run one at a time. Local mode keeps a collection in numpy
    arrays that an upsert grows one point at a time, so a read on another thread (an ingest looks
    up cached vectors while its write-behind thread upserts) could see the payloads and the
    deletion mask at different lengths and fail; a server client needs no such lock."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attribute(*args, **kwargs)

        return call


def _dense(vector: Any) -> np.ndarray:
    """A point's dense vector, whether Qdrant returned it alone or by name (``""``)."""
    return np.asarray(vector[""] if isinstance(vector, dict) else vector, dtype=np.float32)


def _match(field: str, value: str) -> Any:
    from qdrant_client import models

    return models.Filter(must=[models.FieldCondition(key=field, match=models.MatchValue(value=value))])


def _payload(chunk: Chunk) -> dict[str, Any]:
    fields = chunk_fields(chunk)
    metadata = fields.pop("metadata")
    return {
        "chunk_id": chunk.id,
        "text": chunk.text,
        "source": chunk.source,
        "content_hash": chunk.content_hash,
        "metadata": metadata,
        "chunk": fields,
    }


def _chunk(payload: dict[str, Any]) -> Chunk:
    return chunk_from_fields(payload["chunk_id"], payload["text"], {**payload["chunk"], "metadata": payload["metadata"]})


def _connect(settings: QdrantStoreConfig, data_dir: Path | None) -> Any:
    qdrant_client = require("qdrant_client", extra="qdrant", feature="the qdrant store", package="qdrant-client")
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            return Serialized(qdrant_client.QdrantClient(path=str(data_dir)))
        except RuntimeError as exc:  # local mode locks its folder
            raise StoreError(f"{data_dir} is in use by another Qdrant client ({exc}); close it first") from None
    api_key = settings.api_key or os.environ.get("QDRANT_API_KEY") or None
    client = qdrant_client.QdrantClient(
        url=settings.url, api_key=api_key, prefer_grpc=settings.prefer_grpc, timeout=settings.timeout
    )
    try:
        client.get_collections()
    except Exception as exc:  # the client raises transport-specific errors
        if "401" in str(exc) or "403" in str(exc):
            raise AuthenticationError(
                f"Qdrant at {settings.url} refused the API key — set store.qdrant.api_key or QDRANT_API_KEY"
            ) from None
        raise ServiceUnavailableError(
            f"Qdrant is not reachable at {settings.url} ({exc}) — start it (e.g. `docker run -p 6333:6333 "
            "qdrant/qdrant`) or unset store.qdrant.url to use local mode"
        ) from None
    return client
