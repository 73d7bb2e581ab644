"""Every store that syncs remote sources keeps their cursors the same way (``SyncStateConformance``):
in its SQLite catalog, or in PostgreSQL where replicas share them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragloom.config import Config
from ragloom.testing.conformance import SyncStateConformance


class TestEmbeddedSyncState(SyncStateConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls) -> Config:
        return Config.from_dict({"store": {"backend": "embedded"}})


class TestQdrantLocalSyncState(SyncStateConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls) -> Config:
        pytest.importorskip("qdrant_client")
        return Config.from_dict({"store": {"backend": "qdrant"}})


class TestPostgresSyncState(SyncStateConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls, postgres_server) -> Config:
        return Config.from_dict({"store": {"backend": "postgres", "postgres": {"url": postgres_server.url()}}})

    @classmethod
    def config_for(cls, config: Config, index_dir: Path) -> Config:
        name = "t" + hashlib.sha1(str(index_dir).encode()).hexdigest()[:16]
        return config.model_copy(update={"store": config.store.model_copy(update={
            "postgres": config.store.postgres.model_copy(update={"index": name})})})


class TestQdrantPostgresCatalogSyncState(SyncStateConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls, postgres_server) -> Config:
        pytest.importorskip("qdrant_client")
        return Config.from_dict({"store": {"backend": "qdrant", "qdrant": {"catalog": postgres_server.url()}}})

    @classmethod
    def config_for(cls, config: Config, index_dir: Path) -> Config:
        name = "q" + hashlib.sha1(str(index_dir).encode()).hexdigest()[:16]
        url = f"{config.store.qdrant.catalog}&index={name}"
        return config.model_copy(update={"store": config.store.model_copy(update={
            "qdrant": config.store.qdrant.model_copy(update={"catalog": url})})})
