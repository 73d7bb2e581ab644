"""Qdrant store: local mode (``QdrantClient(path=...)``) or a server/cluster (``url``, ``api_key``).

Each chunk is one point of a cosine collection. Point ids are UUIDs derived from
chunk ids (Qdrant takes only integers and UUIDs); the payload holds ``chunk_id``,
``text``, ``source``, ``content_hash``, ``metadata`` (filtered as ``metadata.<key>``)
and ``chunk`` (the remaining chunk fields). Qdrant matches list payloads element-wise,
as ragloom's filter language does, so nearly every filter runs inside Qdrant.
Sources registry, audit log and BM25 live beside the collection (see ``vectordb``).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config, QdrantStoreConfig
from ..errors import AuthenticationError, ServiceUnavailableError, StoreError
from ..filters import Condition
from ..optional import require
from ..types import Chunk
from .vectordb import Neighbour, VectorDBStore, chunk_fields, chunk_from_fields, unit_rows

#: Namespace of the UUIDs that stand for chunk ids (uuid5 of the chunk id in it).
POINT_NAMESPACE = uuid.UUID("6f1d6c3e-4b1e-5a8e-9a57-72616731f0f0")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")  # keys Qdrant's path syntax reads literally
_BATCH = 256


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
        if self._ready:
            self._check_distance()
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
        self.client.create_collection(
            self.collection, vectors_config=m.VectorParams(size=dimension, distance=m.Distance.COSINE)
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
        for start in range(0, len(chunks), _BATCH):
            part = chunks[start : start + _BATCH]
            self.client.upsert(
                self.collection,
                points=self.models.Batch(
                    ids=[point_id(c.id) for c in part],
                    vectors=vectors[start : start + len(part)].tolist(),
                    payloads=[_payload(c) for c in part],
                ),
                wait=True,
            )

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
            for point in self.client.retrieve(self.collection, ids, with_payload=True, with_vectors=vectors):
                chunk = _chunk(point.payload)
                found[chunk.id] = (chunk, np.asarray(point.vector, dtype=np.float32) if vectors else None)
        return found

    def _nearest(self, vector: np.ndarray, n: int, native: Any, want_metadata: bool) -> list[Neighbour]:
        if not self._ready:
            return []
        fields = ["chunk_id", "metadata"] if want_metadata else ["chunk_id"]
        points = self.client.query_points(
            self.collection, query=vector.tolist(), limit=n, query_filter=native, with_payload=fields,
            with_vectors=True,
        ).points
        return [
            (p.payload["chunk_id"], np.asarray(p.vector, dtype=np.float32),
             p.payload.get("metadata", {}) if want_metadata else None)
            for p in points
        ]

    def _vectors_by_hash(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(content_hashes), _BATCH):
            part = list(content_hashes[start : start + _BATCH])
            condition = self.models.FieldCondition(key="content_hash", match=self.models.MatchAny(any=part))
            for point in self._scroll(self.models.Filter(must=[condition]), ["content_hash"], True):
                found[point.payload["content_hash"]] = np.asarray(point.vector, dtype=np.float32)
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
                with_payload=payload, with_vectors=vectors,
            )
            if points:
                yield points
            if offset is None:
                return

    def _count(self) -> int:
        return int(self.client.count(self.collection, exact=True).count) if self._ready else 0

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
            return qdrant_client.QdrantClient(path=str(data_dir))
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
