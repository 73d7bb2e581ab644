"""The grep fallback with a real remote-embedder client whose server goes away, and OpenTelemetry spans."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.config import EmbedderConfig
from ragloom.errors import ProviderError, RagloomWarning
from ragloom.testing.fakes import FakeOllama

CORPUS = {
    "kalman.txt": "The Kalman filter fuses noisy sensor measurements into one state estimate.",
    "ros.md": "# ROS 2\n\nROS 2 nodes communicate by publishing messages on topics to subscribers.",
    "bread.txt": "To bake bread, mix flour, water, salt and yeast, knead the dough and let it rise.",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text)
    return folder


def ollama_config(url: str, **search) -> Config:
    embedder = EmbedderConfig(provider="ollama", model="nomic-embed-text", base_url=url, max_retries=0, timeout=5)
    return Config(embedder=embedder, search=Config().search.model_copy(update=search))


def test_killing_the_embedding_server_mid_session_falls_back_to_grep(corpus: Path, tmp_path: Path) -> None:
    server = FakeOllama(embed_models={"nomic-embed-text": 64}).start()
    with Index.open(tmp_path / "index", ollama_config(server.url)) as index:
        index.ingest([corpus])
        normal = index.retrieve("nodes publishing messages on topics", k=2)
        assert normal.hits[0].source.endswith("ros.md") and "retrieval" not in normal.hits[0].metadata
        server.stop()
        with pytest.warns(RagloomWarning, match="returning grep matches"):
            result = index.retrieve("knead the dough", k=2)
        top = result.hits[0]
        assert top.source.endswith("bread.txt")
        assert top.metadata["retrieval"] == "grep" and top.scores["grep"] > 1.0  # every word, and the phrase
        assert result.trace[-1].name == "grep" and result.trace[-1].note.startswith("fallback: hybrid failed")
        # Filters still apply to the fallback's hits.
        with pytest.warns(RagloomWarning):
            filtered = index.retrieve("source:kalman.txt filter", k=3)
        assert [h.source.endswith("kalman.txt") for h in filtered.hits] == [True]
        # A regex between slashes is a regex.
        with pytest.warns(RagloomWarning):
            assert index.search("/mea?sure\\w+ into/", k=3)[0].source.endswith("kalman.txt")


def test_without_fallback_the_error_says_what_failed(corpus: Path, tmp_path: Path) -> None:
    server = FakeOllama(embed_models={"nomic-embed-text": 64}).start()
    with Index.open(tmp_path / "index", ollama_config(server.url, fallback="none")) as index:
        index.ingest([corpus])
        server.stop()
        with pytest.raises(ProviderError):
            index.search("knead the dough")


def test_nothing_above_min_score_falls_back_to_grep(corpus: Path, tmp_path: Path, embedder) -> None:
    with Index.open(tmp_path / "index", Config(), embedder=embedder) as index:
        index.ingest([corpus])
        with pytest.warns(RagloomWarning, match="nothing scored above min_score"):
            hits = index.search("yeast", k=3, min_score=50.0)
        assert hits[0].source.endswith("bread.txt") and hits[0].metadata["retrieval"] == "grep"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert index.search("yeast", k=1)[0].metadata.get("retrieval") is None


def test_each_step_is_an_opentelemetry_span(corpus: Path, tmp_path: Path, embedder) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragloom import tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ragloom")
    original = tracing._otel_trace
    tracing._otel_trace = type("_OneProvider", (), {"get_tracer": staticmethod(lambda name: tracer)})
    try:
        config = Config.from_dict({"search": {"pipeline": [{"hybrid": {}}, {"dedup": {}}, {"mmr": {}}]}})
        with Index.open(tmp_path / "index", config, embedder=embedder) as index:
            index.ingest([corpus])
            index.search("Kalman filter", k=2)
    finally:
        tracing._otel_trace = original
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"ragloom.search", "ragloom.retrieve.hybrid", "ragloom.stage.dedup", "ragloom.stage.mmr"} <= set(spans)
    root = spans["ragloom.search"]
    assert all(spans[name].parent.span_id == root.context.span_id
               for name in ("ragloom.retrieve.hybrid", "ragloom.stage.dedup", "ragloom.stage.mmr"))
    assert spans["ragloom.stage.mmr"].attributes["ragloom.n_out"] >= 1
    assert root.attributes["ragloom.hits"] == 2


def test_without_opentelemetry_a_span_is_one_shared_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragloom import tracing

    monkeypatch.setattr(tracing, "_otel_trace", None)
    assert tracing.span("a") is tracing.span("b", x=1)
    with tracing.span("a") as current:
        assert current is None
