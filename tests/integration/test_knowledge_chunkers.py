"""Semantic, agentic and proposition chunking with the real embedder, a real local LLM
(SmolLM2, plumbing only) and an OpenAI-compatible server (fake, real wire format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom import Config, Index, RagloomWarning
from ragloom.testing.fakes import FakeOpenAI

TWO_TOPICS = (
    "Sourdough bread rises because wild yeast ferments the flour. Bakers knead the dough until it is elastic. "
    "A long cold proof gives the crumb its open structure. The loaf is baked in a very hot oven. "
    "The Kalman filter fuses noisy sensor measurements into one state estimate. It alternates a prediction "
    "step and an update step. Each measurement is weighted by its covariance. Robots use it for localisation.\n"
)


def index_with(tmp_path: Path, embedder, **chunking) -> Index:
    settings = {"chunking": {"chunk_size": 128, "chunk_overlap": 16, "by_extension": {}, **chunking}}
    return Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder)


def test_semantic_chunking_splits_where_the_topic_changes(tmp_path: Path, embedder) -> None:
    (tmp_path / "doc.txt").write_text(TWO_TOPICS)
    with index_with(tmp_path, embedder, strategy="semantic", semantic_percentile=85) as index:
        index.ingest([tmp_path / "doc.txt"])
        chunks = [c for _, c in index.store.catalog.iter_chunks()]
    assert len(chunks) == 2
    assert chunks[0].text.endswith("very hot oven.") and chunks[1].text.startswith("The Kalman filter")
    assert "percentile=85" in chunks[0].policy and "bge-small" in chunks[0].policy


def _agentic_reply(messages, json_mode):
    numbered = messages[-1]["content"]
    kalman = next(line.split(".")[0] for line in numbered.splitlines() if "Kalman" in line)
    return json.dumps({"sections": [{"title": "Bread", "start": 1}, {"title": "Kalman filter", "start": int(kalman)}]})


def test_agentic_chunking_follows_the_model_and_caches_its_answer(tmp_path: Path, embedder, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    (tmp_path / "doc.txt").write_text(TWO_TOPICS)
    with FakeOpenAI(api_key="k", reply=_agentic_reply) as server:
        settings = {"chunking": {"strategy": "agentic", "chunk_size": 128, "chunk_overlap": 16, "by_extension": {}},
                    "llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url}}
        with Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder) as index:
            index.ingest([tmp_path / "doc.txt"])
            chunks = [c for _, c in index.store.catalog.iter_chunks()]
            assert [c.metadata["section"] for c in chunks] == ["Bread", "Kalman filter"]
            assert chunks[1].text.startswith("The Kalman filter")
            assert len(server.requests) == 1
            (tmp_path / "doc.txt").write_text(TWO_TOPICS + "\n")  # a changed file with the same sentences
            index.ingest([tmp_path / "doc.txt"])
            assert len(server.requests) == 1  # boundaries came from the cache


def test_agentic_chunking_falls_back_to_recursive_on_unusable_answers(tmp_path: Path, embedder, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    (tmp_path / "doc.txt").write_text(TWO_TOPICS)
    with FakeOpenAI(api_key="k", reply=lambda m, j: '{"sections": "none"}') as server:
        settings = {"chunking": {"strategy": "agentic", "chunk_size": 64, "chunk_overlap": 8, "by_extension": {}},
                    "llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url}}
        with Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder) as index:
            with pytest.warns(RagloomWarning, match="chunked recursively"):
                report = index.ingest([tmp_path / "doc.txt"])
            assert report.ok and report.chunks_written >= 2 and len(server.requests) == 2  # asked twice


def test_proposition_chunks_point_at_their_passage_and_the_parent_stage_returns_it(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    (tmp_path / "doc.txt").write_text("Marie Curie discovered polonium. She was born in Warsaw in 1867.\n")
    reply = json.dumps({"propositions": ["Marie Curie discovered polonium.", "Marie Curie was born in Warsaw.",
                                         "Marie Curie was born in 1867."]})
    with FakeOpenAI(api_key="k", reply=lambda m, j: reply) as server:
        settings = {"chunking": {"strategy": "proposition", "by_extension": {}},
                    "llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url},
                    "search": {"presets": {"small-to-big": [{"hybrid": {}}, "parent"]}}}
        with Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder) as index:
            index.ingest([tmp_path / "doc.txt"])
            chunks = [c for _, c in index.store.catalog.iter_chunks()]
            assert [c.text for c in chunks] == json.loads(reply)["propositions"]
            assert len({c.metadata["parent_id"] for c in chunks}) == 1
            hits = index.search("Where was Marie Curie born?", k=3, mode="hybrid")
            assert "born" in hits[0].text and len(hits) == 3
            parents = index.search("Where was Marie Curie born?", k=3, mode="small-to-big")
            assert len(parents) == 1 and parents[0].text.startswith("Marie Curie discovered polonium. She was born")
            assert parents[0].metadata["proposition_text"] == hits[0].text


@pytest.mark.slow
def test_a_tiny_local_llm_drives_agentic_chunking_without_breaking_ingest(tmp_path: Path, embedder) -> None:
    pytest.importorskip("llama_cpp")
    (tmp_path / "doc.txt").write_text(TWO_TOPICS)
    settings = {"chunking": {"strategy": "agentic", "chunk_size": 64, "chunk_overlap": 8, "by_extension": {}},
                "llm": {"model": "smollm2", "max_tokens": 48, "threads": 1}}
    with Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder) as index:
        report = index.ingest([tmp_path / "doc.txt"])
        chunks = [c for _, c in index.store.catalog.iter_chunks()]
    assert report.ok and chunks
    # Whatever SmolLM2 proposes, every sentence lands in exactly one chunk, in order.
    joined = " ".join(c.text for c in chunks)
    assert joined.startswith("Sourdough") and "Robots use it for localisation." in joined
