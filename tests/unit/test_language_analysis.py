"""Languages: detection, per-language BM25 analysis, sentence ends (real tantivy, real detector)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.lang import detect_language, mostly_non_english
from ragloom.lang.analysis import Analyzers, family_of
from ragloom.models.sentences import sentence_ranges
from ragloom.stores.embedded.lexical import LexicalIndex
from ragloom.types import Chunk


def chunk(text: str, lang: str | None, name: str) -> Chunk:
    metadata = {} if lang is None else {"lang": lang}
    return Chunk(id=name, text=text, source=f"/{name}.md", doc_id=name, chunk_index=0, start=0, end=len(text),
                 policy="p", content_hash=name, token_count=len(text.split()), metadata=metadata)


@pytest.mark.parametrize(("text", "code"), [
    ("Die Verteidigung der Panthers gab nur 308 Punkte ab.", "de"),
    ("超级碗50是一场美式足球比赛，旨在确定冠军。", "zh"),
    ("हिन्दी विकिपीडिया एक स्वतंत्र ज्ञानकोश है।", "hi"),
    ("How many points did the Panthers defense surrender?", "en"),
    ("ทีมรับของแพนเธอร์สยอมแพ้ที่คะแนนเท่าไร", "th"),
])
def test_detects_the_language_of_short_texts(text: str, code: str) -> None:
    assert detect_language(text)[0] == code


def test_too_little_text_is_undetermined() -> None:
    assert detect_language("42 / 7")[0] == "und"
    assert not mostly_non_english(["The cell divides.", "Proteins fold."])
    assert mostly_non_english(["Die Zelle teilt sich in zwei Tochterzellen.", "The cell divides."])


def test_each_family_reads_its_language() -> None:
    analyzers = Analyzers()
    # German: stemmed and stop words dropped, so inflected forms meet.
    assert analyzers.terms("de", "die Verteidigungen") == analyzers.terms("de", "Verteidigung")
    # Hindi: whole words with their vowel signs, not cut at every combining mark, and no English stemmer.
    assert analyzers.terms(family_of("hi").name, "स्वतंत्र ज्ञानकोश") == ["स्वतंत्र", "ज्ञानकोश"]
    assert family_of("hi").name == "other" and family_of("en").field == "text" and family_of(None).name == "en"
    # Chinese: character bigrams, with the Latin and digits between them kept as words.
    assert analyzers.terms("cjk", "超级碗50年") == ["超级", "级碗", "50", "年"]


def test_a_chinese_query_finds_the_chinese_chunk(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "bm25")
    chunks = [
        chunk("超级碗50是一场美式足球比赛，丹佛野马队击败了卡罗来纳黑豹队。", "zh", "zh"),
        chunk("Die Verteidigungen der Panthers gaben nur 308 Punkte ab.", "de", "de"),
        chunk("The Panthers defense gave up just 308 points.", "en", "en"),
    ]
    index.rebuild(enumerate(chunks), generation=1)
    assert [c.chunk_id for c in index.search("哪支球队赢得了超级碗？", 3)] == ["zh"]
    # German stemming: the singular query meets the plural text.
    assert [c.chunk_id for c in index.search("Verteidigung", 3)] == ["de"]
    assert index.families == {"cjk", "de", "en"}
    index.close()
    reopened = LexicalIndex(tmp_path / "bm25")  # the families are read back with the generation
    assert reopened.families == {"cjk", "de", "en"} and reopened.generation() == 1


def test_an_english_only_index_reads_queries_as_before(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "bm25")
    index.rebuild(enumerate([chunk("Running dogs", "en", "a"), chunk("Sleeping cats", None, "b")]), generation=1)
    assert index.terms("the running dog") == {"en": ["run", "dog"]}
    assert [c.chunk_id for c in index.search("run", 2)] == ["a"]


def test_sentences_end_at_cjk_and_devanagari_marks() -> None:
    text = "超级碗是一场比赛。野马队赢了！谁赢了？ यह एक भाषा है। Hello there. Bye!"
    for splitter in ("regex", "punkt"):
        found = [text[s:e] for s, e in sentence_ranges(text, 0, len(text), splitter)]
        assert found == ["超级碗是一场比赛。", "野马队赢了！", "谁赢了？", "यह एक भाषा है।", "Hello there.", "Bye!"]


def test_highlighting_reads_the_query_in_its_language() -> None:
    from ragloom.server.highlight import matched_spans, query_terms

    text = "超级碗50是一场美式足球比赛，丹佛野马队击败了卡罗来纳黑豹队。"
    assert [text[s:e] for s, e in matched_spans(text, query_terms("哪支球队赢得了超级碗？"))] == ["超级碗"]
    text = "Die Verteidigungen der Panthers gaben nur 308 Punkte ab."
    found = [text[s:e] for s, e in matched_spans(text, query_terms("Wie viele Punkte gab die Verteidigung ab?"))]
    assert {"Verteidigungen", "gaben", "Punkte"} <= set(found) and "Panthers" not in found


def test_hindi_inflections_meet_without_an_english_stemmer() -> None:
    analyzers = Analyzers()
    assert analyzers.terms("other", "लड़के") == analyzers.terms("other", "लड़का") == ["लड़क"]
    assert analyzers.terms("other", "running") == ["running"]  # no English stemming outside English
