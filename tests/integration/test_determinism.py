"""A chunk's vector is a function of its text and the model only (issue 15, item 21): an ingest
resumed after a crash, or run in another order, gives exactly a clean build's vectors and results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import Config, Index

TOPICS = [
    "The Kalman filter fuses noisy measurements from several sensors into one state estimate",
    "ROS 2 nodes communicate by publishing messages on topics that any subscriber receives",
    "A* search finds the shortest path on a grid using an admissible heuristic",
    "Sourdough bread needs a starter, flour, water and salt, and a long slow rise",
    "Transformers attend to every token of the input with multi-head self-attention",
    "The mitochondria produce most of the chemical energy a cell needs to function",
    "Sampling-based planners such as RRT explore the configuration space at random",
    "Photosynthesis turns light, water and carbon dioxide into glucose and oxygen",
    "Gradient descent follows the negative gradient of the loss to a local minimum",
    "The French Revolution began in 1789 and abolished the feudal privileges of the nobility",
    "Lidar measures distance by timing the reflection of laser pulses off surfaces",
    "Vaccines train the immune system to recognise a pathogen without causing disease",
]
QUERIES = ["how do robots estimate their state from sensors?", "shortest path planning", "baking bread",
           "how do cells get energy?", "neural network training", "history of France", "laser distance"]


class Crash(BaseException):
    """Stands for the process being killed: nothing after it runs."""


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for i, topic in enumerate(TOPICS):
        # Paragraphs of different lengths, so batches mix short and long chunks.
        paragraphs = [f"{topic}. " * (1 + (i + j) % 5) + f"Note {i}.{j}." for j in range(4)]
        (folder / f"doc{i:02d}.txt").write_text("\n\n".join(paragraphs))
    return folder


def _config() -> Config:
    return Config.from_dict({"chunking": {"strategy": "paragraph", "chunk_size": 64, "chunk_overlap": 0}})


def _vectors(index: Index) -> dict[str, bytes]:
    catalog = index.store.catalog
    stored = catalog.vector_view()
    return {cid: stored[slot].tobytes() for rows, ids, slots in catalog.iter_slots()
            for cid, slot in zip(ids, slots)}


def _results(index: Index) -> list[list[tuple[str, float]]]:
    return [[(h.chunk_id, h.score) for h in index.search(q, k=5, mode=mode)]
            for q in QUERIES for mode in ("dense", "hybrid")]


def test_a_texts_vector_does_not_depend_on_its_batch(embedder) -> None:
    texts = [f"{topic}. " * (1 + i % 4) for i, topic in enumerate(TOPICS * 3)]
    together = embedder.embed_documents(texts)
    shifted = embedder.embed_documents(texts[5:])
    alone = np.stack([embedder.embed_documents([t])[0] for t in texts[:6]])
    assert np.array_equal(together[5:], shifted)
    assert np.array_equal(together[:6], alone)


def test_fastembed_on_the_int8_files_is_batch_independent_too() -> None:
    pytest.importorskip("fastembed")
    from ragloom.config import EmbedderConfig
    from ragloom.embed import create_embedder
    from ragloom.embed.base import quantises_per_batch
    from ragloom.models import packaged_model_dir

    folder = packaged_model_dir("bge_small_en")
    assert quantises_per_batch(folder / "model.onnx")
    embedder = create_embedder(EmbedderConfig(provider="fastembed", model=str(folder)))
    texts = [f"{topic}. " * (1 + i % 4) for i, topic in enumerate(TOPICS * 2)]
    assert np.array_equal(embedder.embed_documents(texts)[5:], embedder.embed_documents(texts[5:]))


def test_an_ingest_resumed_after_a_crash_gives_a_clean_builds_vectors_and_results(tmp_path, embedder, monkeypatch):
    docs = _corpus(tmp_path / "docs")
    with Index.open(tmp_path / "clean", _config(), embedder=embedder) as clean:
        assert clean.ingest([docs]).ok
        expected_vectors, expected_results = _vectors(clean), _results(clean)
    assert len(expected_vectors) > 40

    with Index.open(tmp_path / "crashed", _config(), embedder=embedder) as crashed:
        real, calls = crashed.store.replace_source, []

        def dies_on_the_fifth_source(*args):
            calls.append(args[0].path)
            if len(calls) == 5:
                raise Crash()
            real(*args)

        monkeypatch.setattr(crashed.store, "replace_source", dies_on_the_fifth_source)
        with pytest.raises(Crash):
            crashed.ingest([docs])
    with Index.open(tmp_path / "crashed", _config(), embedder=embedder) as resumed:
        report = resumed.ingest([docs])
        assert len(report.unchanged) == 4 and len(report.added) == len(TOPICS) - 4
        assert _vectors(resumed) == expected_vectors
        assert _results(resumed) == expected_results


def test_files_ingested_one_by_one_in_reverse_give_a_clean_builds_vectors(tmp_path, embedder):
    docs = _corpus(tmp_path / "docs")
    with Index.open(tmp_path / "clean", _config(), embedder=embedder) as clean:
        clean.ingest([docs])
        expected_vectors, expected_results = _vectors(clean), _results(clean)
    with Index.open(tmp_path / "reverse", _config(), embedder=embedder) as reverse:
        for path in sorted(docs.iterdir(), reverse=True):
            reverse.ingest([path])
        assert _vectors(reverse) == expected_vectors
        assert _results(reverse) == expected_results
