"""Thai read as words (newmm, nlpo3 and the packaged dictionary): analysis, ranking, an index
written before Thai had its own field, highlighting, very long input (real tantivy, real store)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import tantivy

from ragloom.config import Config
from ragloom.errors import RagloomWarning
from ragloom.lang import thai
from ragloom.lang.analysis import FAMILIES, Analyzers, family_of, prepare
from ragloom.server.highlight import matched_spans, query_terms
from ragloom.stores.base import create_store
from ragloom.stores.embedded.lexical import (FAMILIES_AFTER_METADATA, IDENTIFIER_FIELD, METADATA_FIELD,
                                             LexicalIndex)
from ragloom.testing.conformance import record_for, synthetic_chunks, unit_vector
from ragloom.types import Chunk

# "The national team of Thailand won the football final last night, a lively game."
TEAM = "ทีมชาติไทยชนะการแข่งขันฟุตบอลนัดชิงชนะเลิศเมื่อคืนนี้อย่างสนุกสนาน"
# "The titans trickled into the city, then the titans trickled home": the character pairs of
# ไทย (Thai) twice each, inside other words (ไททัน, ทยอย).
TITANS = "ไททันทยอยเดินทางมาถึงเมืองแล้วไททันก็ทยอยกลับบ้าน"
# "It rained hard all night until the road in front of the house flooded."
RAIN = "ฝนตกหนักทั้งคืนจนน้ำท่วมถนนหน้าบ้าน"


def chunk(text: str, name: str, lang: str = "th") -> Chunk:
    return Chunk(id=name, text=text, source=f"/{name}.md", doc_id=name, chunk_index=0, start=0, end=len(text),
                 policy="p", content_hash=name, token_count=4, metadata={"lang": lang})


def test_thai_is_read_as_dictionary_words() -> None:
    assert family_of("th").name == "th" and family_of("th").field == "text_th"
    assert family_of("lo").name == "sea"  # Lao, Khmer, Burmese keep their bigrams
    analyzers = Analyzers()
    # "I love the Thai language a lot and like chicken rice in Bangkok 2024"
    assert analyzers.terms("th", "ผมรักภาษาไทยมาก และชอบกินข้าวมันไก่ที่กรุงเทพมหานคร Bangkok 2024") == [
        "ผม", "รัก", "ภาษาไทย", "มาก", "และ", "ชอบ", "กิน", "ข้าวมันไก่", "ที่", "กรุงเทพมหานคร", "bangkok", "2024"]
    # An older index's Thai chunks sit in ``sea``, which still reads Thai script as bigrams.
    assert analyzers.terms("sea", "ไทย") == ["ไท", "ทย"]


def test_the_packaged_dictionary_is_the_recorded_one() -> None:
    assert thai.dictionary_sha256() == thai.DICTIONARY_SHA256
    assert thai.DICTIONARY.stat().st_size < 400_000  # gzipped: 1.5 MB of words in about 300 kB


def test_a_thai_word_finds_its_chunk_and_not_the_chunk_holding_its_character_pairs(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "bm25")
    index.rebuild(enumerate([chunk(TEAM, "team"), chunk(TITANS, "titans"), chunk(RAIN, "rain")]), generation=1)
    assert index.families == {"th"} and index.terms("ไทย") == {"th": ["ไทย"]}
    # Read as bigrams, ไทย ranked the titans first (ไท and ทย twice each there).
    assert [c.chunk_id for c in index.search("ไทย", 3)] == ["team"]
    assert [c.chunk_id for c in index.search("ทีมไทยชนะไหม", 3)] == ["team"]  # "did the Thai team win?"
    index.close()


def _write_old_bm25(folder: Path, rows_and_chunks: list[tuple[int, Chunk]], generation: int) -> None:
    """A BM25 index as ragloom wrote it before Thai had its own family: no ``text_th`` field, and
    Thai chunks in ``text_sea`` as character bigrams."""
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("row", stored=False, indexed=True, fast=True)
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("source", stored=False, tokenizer_name="raw")
    for name, family in FAMILIES.items():
        if name not in FAMILIES_AFTER_METADATA:
            builder.add_text_field(family.field, stored=False, tokenizer_name=family.analyzer_name, index_option="freq")
    builder.add_text_field(IDENTIFIER_FIELD, stored=False, tokenizer_name="raw", index_option="freq")
    builder.add_text_field(METADATA_FIELD, stored=False, tokenizer_name="raw", index_option="basic")
    folder.mkdir(parents=True)
    index = tantivy.Index(builder.build(), path=str(folder))
    Analyzers().register(index)
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for row, old in rows_and_chunks:
        document = tantivy.Document()
        document.add_unsigned("row", row)
        document.add_text("id", old.id)
        document.add_text("source", old.source)
        document.add_text(FAMILIES["sea"].field, prepare("sea", old.text))
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    state = {"generation": generation, "families": ["sea"], "metadata_terms": True}
    (folder / "ragloom-state.json").write_text(json.dumps(state))


def test_an_index_written_before_thai_had_its_own_field_keeps_finding_its_thai_chunks(tmp_path: Path) -> None:
    path = tmp_path / "index"
    store = create_store(path, Config())
    texts = [TEAM, TITANS, RAIN]
    chunks = synthetic_chunks("th.md", [0, 1, 2], lambda n: texts[n])
    for each in chunks:
        each.metadata["lang"] = "th"
    store.replace_source(record_for("th.md", chunks), chunks, np.stack([unit_vector(n) for n in range(3)]))
    store.flush()
    generation = store.catalog.generation()
    rows = list(store.catalog.iter_chunks())
    store.close()
    shutil.rmtree(path / "bm25")
    _write_old_bm25(path / "bm25", rows, generation)

    # A reader that may not rebuild it reads it as it is: a Thai query meets the Thai chunks
    # through ``sea``, as it did when they were written.
    reader = create_store(path, Config(), read_only=True)
    try:
        assert reader.lexical.families == {"sea"} and not reader.lexical.in_memory
        assert [h.chunk_id for h in reader.search_lexical("ทีมไทย", 3)][0] == chunks[0].id
    finally:
        reader.close()

    # A writer finds another schema and rebuilds the cache from SQLite: Thai is then read as words.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer = create_store(path, Config())
    try:
        assert any(issubclass(w.category, RagloomWarning) and "other fields" in str(w.message) for w in caught)
        assert [h.chunk_id for h in writer.search_lexical("ไทย", 3)] == [chunks[0].id]
        assert writer.lexical.families == {"th"}
    finally:
        writer.close()


def test_an_index_whose_thai_was_cut_otherwise_is_stale(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "bm25")
    index.rebuild(enumerate([chunk(TEAM, "team"), chunk(RAIN, "rain", lang="en")]), generation=3)
    index.close()
    state_file = tmp_path / "bm25" / "ragloom-state.json"
    state = json.loads(state_file.read_text())
    assert state["segmentation"] == {"th": thai.segmentation()} and LexicalIndex(tmp_path / "bm25").generation() == 3
    # Another dictionary or nlpo3 version cuts other words: the store then rebuilds the cache.
    state_file.write_text(json.dumps({**state, "segmentation": {"th": "newmm nlpo3 1.3.0 words_th 000000000000"}}))
    assert LexicalIndex(tmp_path / "bm25").generation() == -1


def test_thai_query_words_are_highlighted_in_thai_text() -> None:
    terms = query_terms("ทีมไทยชนะไหม")  # "did the Thai team win?"
    assert terms.families == ("en", "th")
    text = f"{TITANS} {TEAM}"
    assert [text[a:b] for a, b in matched_spans(text, terms)] == ["ทีม", "ไทยชนะ"]  # ไทย and ชนะ, adjacent
    # The character pairs of ไทย inside ไททัน and ทยอย are not words of the query.
    assert matched_spans(TITANS, query_terms("ไทย")) == []


def test_very_long_thai_runs_are_cut_in_bounded_memory() -> None:
    # 200,000 characters without a space, ambiguous at every step (ตากลม: ตา|กลม or ตาก|ลม),
    # and of one consonant: run in a fresh process so that its peak memory is its own. VmHWM is the
    # peak of this process's own memory (ru_maxrss would carry the parent's peak over the exec). The
    # timeout only guards against a cut that never ends (unsafe mode on a pathological run); the
    # time it takes is not asserted (about 0.4 s here).
    script = """
import re
from ragloom.lang.analysis import Analyzers
analyzers = Analyzers()
analyzers.terms("th", "ทดสอบ")
counts = [sum(analyzers.term_counts("th", text).values()) for text in ("ตากลม" * 40_000, "ก" * 200_000)]
peak_kb = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
print(peak_kb // 1024, *counts)
"""
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    peak_mb, ambiguous, repeated = found.stdout.split()
    assert int(peak_mb) < 500, found.stdout  # about 150 MB: Python, tantivy and the dictionary (60 MB)
    assert int(ambiguous) >= 40_000 and int(repeated) > 0
