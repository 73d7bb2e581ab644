"""Data that changes under an ingest, chunks the model can read, queries that come back (issue 20, items 9-18).

Each test reproduces one item of the probe: it failed (empty result, crash, stale text, a
chunk the model reads only the start of, a confusing message) before the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Config, Index

SCIFACT = Path("/work/shared/datasets/scifact/corpus.jsonl")
RAGLOOM = [sys.executable, "-m", "ragloom"]


def run(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    full_env.update(env or {})
    return subprocess.run([*RAGLOOM, *args], cwd=cwd, capture_output=True, text=True, env=full_env,
                          timeout=timeout, errors="replace")


def scifact_docs(folder: Path, n: int = 40) -> Path:
    """The first ``n`` SciFact abstracts, one text file each."""
    folder.mkdir(parents=True, exist_ok=True)
    with SCIFACT.open() as lines:
        for line, _ in zip(lines, range(n)):
            doc = json.loads(line)
            (folder / f"{doc['_id']}.txt").write_text(f"{doc['title']}\n\n{doc['text']}\n")
    return folder


@pytest.fixture(scope="module")
def science(tmp_path_factory: pytest.TempPathFactory, embedder):
    root = tmp_path_factory.mktemp("science")
    docs = scifact_docs(root / "docs")
    config = Config.from_dict({"index": str(root / "ix"), "search": {"k": 10}})
    with Index.open(config.index, config, embedder=embedder) as index:
        assert index.ingest([docs]).ok
        yield index


# --- item 12: quotes and apostrophes never empty a search --------------------------------------

#: Long natural requests with quotes, apostrophes and punctuation, as people type them.
LONG_REQUESTS = [
    'I\'d like articles on "what you see is what you get" systems, if there are any; I\'m not sure they\'re here.',
    "Could you find the papers about 'cerebral white matter' in newborns? I've heard it's \"developing\" "
    "differently (especially in pre-term infants) - what's the evidence?",
    'What\'s known about "T cell" responses & the immune system\'s "memory", e.g. in mice? Don\'t include reviews!',
    'Someone\'s notes said: "diffusion tensor imaging shows anisotropy in the corpus callosum of every newborn '
    'ever scanned"; is that right, or is it the authors\' guess?',
    "Papers that aren't about 'cancer' but about \u201cstem cells\u201d and their \u201cniche\u201d: the authors' "
    "conclusions, ideally, with the mice experiments' results.",
    'Note: phase 2 of my review needs "Bayesian" model-fit measures (DIC?) -- the \'complexity\' of a model, '
    "that's all.",
]


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid", "fast", "balanced", "precise"])
def test_long_punctuated_requests_never_come_back_empty(science, mode):
    for request in LONG_REQUESTS:
        hits = science.search(request, k=10, mode=mode)
        assert len(hits) == 10, (mode, request, len(hits))


def test_a_quoted_phrase_ranks_passages_that_hold_it_first(science):
    hits = science.search('I\'m looking for anything on "relative anisotropy" in the brain', k=10)
    assert len(hits) == 10
    assert "relative anisotropy" in hits[0].text.lower()
    result = science.retrieve('studies of "stem cells", please', k=3)
    assert result.plan.phrases == ("stem cells",) and result.plan.required_phrases == ()
    # Enough passages hold it: the phrase narrows the search to them.
    assert len(result.hits) == 3 and all("stem cells" in hit.text.lower() for hit in result.hits)


def test_a_plus_quoted_phrase_must_appear_in_every_hit(science):
    result = science.retrieve('what do we know about +"white matter" development?', k=10)
    assert result.plan.required_phrases == ("white matter",)
    assert result.hits and all("white matter" in hit.text.lower() for hit in result.hits)
    assert science.search('+"what you see is what you get"', k=10) == []


# --- item 13: a long query does not crash the cross-encoder ----------------------------------------

LONG_QUERY = " ".join(
    ["Which studies measured how the white matter of newborn brains develops, with diffusion tensor "
     "imaging, relative anisotropy and fibre tracking, in preterm and term infants, and what did they find?"] * 11
)


def test_precise_preset_takes_a_330_word_query(science):
    assert len(LONG_QUERY.split()) > 320
    hits = science.search(LONG_QUERY, k=5, mode="precise")
    assert len(hits) == 5 and "rerank" in hits[0].scores


def test_every_cross_encoder_use_cuts_a_long_query(science):
    from ragloom.retrieve.rerankers.cross_encoder import shared_cross_encoder

    model = shared_cross_encoder(science.search_context())  # a 512-token window: twice the query overflows it
    query = LONG_QUERY + " " + LONG_QUERY
    passage = "Diffusion tensor imaging of newborn white matter shows relative anisotropy rising with age. " * 8
    # rerank, compression and the relevance gate score (query, texts); support checks score pairs.
    scores = model.score(query, [passage, "bread dough"])
    assert scores[0] > scores[1]
    assert model.score_pairs([(query, passage)])[0] == pytest.approx(scores[0], abs=1e-4)
    cut = model.fit_query(query)
    assert query.startswith(cut) and len(cut) < len(query) and model.fit_query("short") == "short"
