"""Every store passes the same conformance suite (ragloom.testing.conformance)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.config import Config
from ragloom.testing.chroma_server import ChromaServer
from ragloom.testing.conformance import StoreConformance


class TestEmbeddedStore(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls) -> Config:
        return Config.from_dict({"store": {"backend": "embedded"}})


class TestChromaEmbedded(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls) -> Config:
        pytest.importorskip("chromadb")
        return Config.from_dict({"store": {"backend": "chroma"}})


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    pytest.importorskip("chromadb")
    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server


class TestChromaServer(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls, chroma_server: ChromaServer) -> Config:
        return Config.from_dict({"store": {"backend": "chroma", "chroma": {
            "host": chroma_server.host, "port": chroma_server.port}}})

    @classmethod
    def config_for(cls, config: Config, index_dir: Path) -> Config:
        # One server for the module; each store gets its own collection.
        collection = "t" + hashlib.sha1(str(index_dir).encode()).hexdigest()[:16]
        return config.model_copy(update={"store": config.store.model_copy(update={
            "chroma": config.store.chroma.model_copy(update={"collection": collection})})})


class TestQdrantLocal(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls) -> Config:
        pytest.importorskip("qdrant_client")
        return Config.from_dict({"store": {"backend": "qdrant"}})


class TestPostgres(StoreConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls, postgres_server) -> Config:
        return Config.from_dict({"store": {"backend": "postgres", "postgres": {"url": postgres_server.url()}}})

    @classmethod
    def config_for(cls, config: Config, index_dir: Path) -> Config:
        # One database for the session; each store is its own index in it.
        name = "t" + hashlib.sha1(str(index_dir).encode()).hexdigest()[:16]
        return config.model_copy(update={"store": config.store.model_copy(update={
            "postgres": config.store.postgres.model_copy(update={"index": name})})})


class TestQdrantLocalPostgresCatalog(StoreConformance):
    """Qdrant holds the chunks; the registry, journal, generation and audit chain are in PostgreSQL."""

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
