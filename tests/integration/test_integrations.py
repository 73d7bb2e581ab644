"""LangChain and LlamaIndex retrievers over a real index, against the real packages."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from ragloom import Index

QUESTION = "how do ROS 2 nodes communicate?"


@pytest.fixture(scope="module")
def index(tmp_path_factory, sample_docs):
    root = tmp_path_factory.mktemp("integrations")
    shutil.copytree(sample_docs[0].parent, root / "docs")
    with Index.open(root / "index") as index:
        index.ingest([root / "docs"])
        yield index


def test_langchain_retriever_returns_documents_with_metadata_and_score(index):
    pytest.importorskip("langchain_core", reason="pip install 'ragloom[langchain]'")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from ragloom.integrations.langchain import RagloomRetriever

    retriever = RagloomRetriever(index=index, k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUESTION)
    hits = index.search(QUESTION, 3)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == [h.chunk_id for h in hits]
    assert [d.page_content for d in docs] == [h.text for h in hits]
    first = docs[0].metadata
    assert first["score"] == hits[0].score and first["rank"] == 1 and first["source"] == hits[0].source
    assert first["section"] == hits[0].section and "chunk_index" in first and set(first["scores"]) == {"dense", "lexical"}
    # Filters and modes pass through; the async API (threads underneath) shares the index safely.
    pdf = RagloomRetriever(index=index, k=5, where={"page": {"$gte": 2}}, mode="dense").invoke("path planning")
    assert pdf and all(d.metadata["page"] >= 2 for d in pdf)
    batched = asyncio.run(retriever.abatch(["tf2 frames", "kalman filter", "planning", QUESTION]))
    assert [d.id for d in batched[3]] == [h.chunk_id for h in hits]


def test_llamaindex_retriever_returns_nodes_with_scores(index):
    pytest.importorskip("llama_index.core", reason="pip install 'ragloom[llamaindex]'")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle

    from ragloom.integrations.llamaindex import RagloomRetriever

    retriever = RagloomRetriever(index, k=3)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUESTION)
    hits = index.search(QUESTION, 3)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [h.chunk_id for h in hits]
    assert [n.score for n in nodes] == [h.score for h in hits]
    node = nodes[0].node
    assert node.get_content() == hits[0].text and node.metadata["source"] == hits[0].source
    assert node.start_char_idx == hits[0].metadata["start"] and node.end_char_idx == hits[0].metadata["end"]
    lexical = RagloomRetriever(index, k=2, mode="lexical").retrieve(QueryBundle("quaternion"))
    assert lexical and lexical[0].node.metadata["source"] and lexical[0].score == index.search(
        "quaternion", 2, mode="lexical")[0].score
    assert asyncio.run(retriever.aretrieve(QUESTION))[0].node.node_id == hits[0].chunk_id


def test_from_path_opens_an_existing_index_only(index, tmp_path):
    pytest.importorskip("langchain_core", reason="pip install 'ragloom[langchain]'")
    from ragloom.errors import IndexNotFoundError
    from ragloom.integrations.langchain import RagloomRetriever

    retriever = RagloomRetriever.from_path(index.path, k=1)
    try:
        assert retriever.invoke(QUESTION)[0].id == index.search(QUESTION, 1)[0].chunk_id
    finally:
        retriever.index.close()
    with pytest.raises(IndexNotFoundError):
        RagloomRetriever.from_path(tmp_path / "missing")


@pytest.mark.parametrize("fusion", ["reciprocal_rerank", "relative_score"])
def test_llamaindex_fusion_merges_the_same_chunk_found_by_two_retrievers(index, fusion):
    pytest.importorskip("llama_index.core", reason="pip install 'ragloom[llamaindex]'")
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import QueryFusionRetriever

    from ragloom.integrations.llamaindex import RagloomRetriever

    dense, lexical = RagloomRetriever(index, k=5, mode="dense"), RagloomRetriever(index, k=5, mode="lexical")
    found = {name: retriever.retrieve(QUESTION) for name, retriever in (("dense", dense), ("lexical", lexical))}
    both = {n.node.node_id for n in found["dense"]} & {n.node.node_id for n in found["lexical"]}
    distinct = {n.node.node_id for nodes in found.values() for n in nodes}
    assert both, "the two retrievers should share a chunk for this question"
    # MockLLM answers with the prompt it was given: what an LLM would read.
    llm = MockLLM()
    fused = QueryFusionRetriever([dense, lexical], llm=llm, mode=fusion, similarity_top_k=10, num_queries=1,
                                 use_async=False)
    nodes = fused.retrieve(QUESTION)
    assert sorted(n.node.node_id for n in nodes) == sorted(distinct)  # each chunk once
    if fusion == "reciprocal_rerank":
        ranks = {name: {n.node.node_id: rank for rank, n in enumerate(nodes_, start=1)} for name, nodes_ in found.items()}
        for node in nodes:  # a shared chunk's score is the sum of both lists' 1/(rank + 60)
            expected = sum(1.0 / (r[node.node.node_id] - 1 + 60) for r in ranks.values() if node.node.node_id in r)
            assert node.score == pytest.approx(expected)
    response = RetrieverQueryEngine.from_args(fused, llm=llm).query(QUESTION)
    assert sorted(n.node.node_id for n in response.source_nodes) == sorted(distinct)
    prompt = str(response)
    assert nodes[0].node.get_content() in prompt
    assert not any(f"{key}: " in prompt for key in ("score", "rank", "scores"))


def test_langchain_retriever_takes_k_where_and_mode_at_call_time(index):
    pytest.importorskip("langchain_core", reason="pip install 'ragloom[langchain]'")
    from ragloom.integrations.langchain import RagloomRetriever

    retriever = RagloomRetriever(index=index)  # k=5, hybrid, no filter
    assert len(retriever.invoke(QUESTION, k=1)) == 1
    paged = retriever.invoke("path planning", k=4, where={"page": {"$gte": 2}}, mode="dense")
    assert paged and len(paged) <= 4 and all(d.metadata["page"] >= 2 for d in paged)
    assert all(set(d.metadata["scores"]) == {"dense"} for d in paged)
    assert len(retriever.invoke(QUESTION)) == 5  # the call's values were for that call only


try:
    from langchain_tests.integration_tests import RetrieversIntegrationTests
except ImportError:  # pip install langchain-tests (the test extra)
    RetrieversIntegrationTests = None

if RetrieversIntegrationTests is not None:
    class TestLangChainStandardRetrieverTests(RetrieversIntegrationTests):
        """LangChain's own conformance suite for retrievers, over the real index."""

        @pytest.fixture(autouse=True)
        def _with_index(self, index):
            self.index = index

        @property
        def retriever_constructor(self):
            from ragloom.integrations.langchain import RagloomRetriever

            return RagloomRetriever

        @property
        def retriever_constructor_params(self) -> dict:
            return {"index": self.index}

        @property
        def retriever_query_example(self) -> str:
            return QUESTION
