"""Long requests: a term the query repeats counts as often as it is said; a pasted text is words."""

from __future__ import annotations

from pathlib import Path

from ragloom.config import UnderstandConfig
from ragloom.retrieve.understand import understand
from ragloom.stores.embedded.lexical import MAX_QUERY_TERMS, LexicalIndex
from ragloom.types import Chunk


def _chunk(chunk_id: str, text: str) -> Chunk:
    return Chunk(id=chunk_id, text=text, source=f"{chunk_id}.txt", doc_id=chunk_id, chunk_index=0, start=0,
                 end=len(text), policy="test", content_hash=chunk_id, token_count=len(text.split()))


def test_a_term_said_twice_counts_twice(tmp_path: Path):
    index = LexicalIndex(tmp_path / "bm25")
    # Each passage holds one of the two words once: a tie, broken by chunk id, unless the query's
    # repeated word weighs more.
    index.rebuild(((row, _chunk(cid, text)) for row, (cid, text) in enumerate(
        [("a", "volcano eruptions recorded"), ("b", "glacier retreat recorded")])), generation=1)
    assert index.term_weights("glacier volcano glaciers") == {"en": {"glacier": 2, "volcano": 1}}
    assert [c.chunk_id for c in index.search("volcano glacier", k=2)] == ["a", "b"]
    assert [c.chunk_id for c in index.search("glacier volcano glaciers", k=2)] == ["b", "a"]
    ranked = index.search("glacier volcano glaciers", k=2)
    assert ranked[0].score > ranked[1].score


def test_the_terms_of_a_pasted_page_are_capped(tmp_path: Path):
    index = LexicalIndex(tmp_path / "bm25")
    words = " ".join(f"word{i}x" for i in range(MAX_QUERY_TERMS + 500))
    assert len(index.term_weights(words)["en"]) == MAX_QUERY_TERMS
    assert index.terms(words)["en"][0] == "word0x"


def test_a_pasted_text_is_searched_as_written_and_a_short_query_keeps_its_phrases():
    settings = UnderstandConfig()
    short = understand('how do "tide pools" form', settings)
    assert short.phrases == ["tide pools"]
    pasted = ('The committee asked for "a complete survey" (of every coastal site) before source:x.md the '
              + "funding decision, which depends on the tides and the weather " * 6)
    understood = understand(pasted, settings)
    assert understood.phrases == [] and understood.conditions == [] and understood.text == pasted
