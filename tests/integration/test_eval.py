"""`ragloom eval` end to end: a tiny BEIR dataset and a keyword test set, with the real
packaged embedder, the embedded store and ir-measures."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.eval.keywords import load_keyword_cases
from ragloom.eval.metrics import per_query_metrics
from ragloom.eval.scratch import write_corpus_shards

pytest.importorskip("ir_measures")

DOCS = {
    "d1": ("Zebra grazing", "Zebras graze on the savanna grasslands of Kenya."),
    "d2": ("Stripes", "Zebra stripes may deter biting flies."),
    "d3": ("Volcanoes", "Volcanoes erupt when magma pressure builds beneath the crust."),
    "d4": ("Basalt", "Basalt forms from cooled lava flows."),
    "d5": ("Bread", "Sourdough bread rises thanks to wild yeast."),
    "d6": ("Coffee", "Espresso is brewed by forcing hot water through coffee grounds."),
    "d7": ("Ice", "Glaciers carve valleys during ice ages."),
    "d8": ("Oceans", "Tides follow the pull of the moon."),
}
# Each query word occurs in exactly one document, so BM25 returns exactly that document.
QUERIES = {"q1": "magma", "q2": "espresso", "q3": "glaciers", "q4": "sourdough", "q5": "not judged"}
QRELS = [("q1", "d3", 2), ("q1", "d4", 1), ("q2", "d6", 1), ("q3", "d8", 1), ("q4", "d5", 1)]


def ragloom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragloom.cli.app", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny-beir")
    (root / "qrels").mkdir()
    with open(root / "corpus.jsonl", "w") as f:
        for doc_id, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for qid, text in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, d, g in QRELS]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def first_run(beir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("eval-work")
    done = ragloom("eval", str(beir), "--mode", "lexical", "--mode", "hybrid", "--out", "out",
                   "--cache-dir", "cache", "--quiet", cwd=work)
    assert done.returncode == 0, done.stderr
    report = json.loads((work / "out" / f"{beir.name}-test.json").read_text())
    return {"work": work, "stdout": done.stdout, "report": report}


def test_library_wiring_matches_hand_computed_metrics() -> None:
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "d": 1}}
    run = {"q": {"x": 0.9, "a": 0.8, "c": 0.7, "b": 0.6}}  # ranks: x, a (grade 2), c (0), b (1); d never found
    values = per_query_metrics(qrels, run)
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert values["nDCG@10"]["q"] == pytest.approx(dcg / ideal)  # trec_eval: linear gains
    assert values["recall@10"]["q"] == pytest.approx(2 / 3)
    assert values["MRR@10"]["q"] == pytest.approx(1 / 2)
    assert values["MAP@100"]["q"] == pytest.approx((1 / 2 + 2 / 4) / 3)


def test_eval_scores_the_tiny_dataset_as_computed_by_hand(first_run: dict) -> None:
    report = first_run["report"]
    assert report["queries"] == 4  # q5 has no judgements
    lexical, hybrid = report["runs"]
    assert (lexical["name"], hybrid["name"]) == ("lexical", "hybrid")
    q1 = 2 / (2 + 1 / math.log2(3))  # d3 (grade 2) found at rank 1, d4 (grade 1) never
    assert lexical["per_query"]["nDCG@10"] == pytest.approx({"q1": q1, "q2": 1.0, "q3": 0.0, "q4": 1.0})
    assert lexical["metrics"]["nDCG@10"] == pytest.approx((q1 + 2) / 4)
    assert lexical["metrics"]["recall@10"] == pytest.approx((0.5 + 1 + 0 + 1) / 4)
    assert lexical["metrics"]["MRR@10"] == pytest.approx(0.75)
    assert 0.0 <= hybrid["p_values"]["nDCG@10"] <= 1.0
    assert lexical["latency_ms"]["p95"] >= lexical["latency_ms"]["p50"] > 0
    index = lexical["index"]
    assert index["documents"] == 8 and index["chunks"] == 8 and index["tokens_per_second"] > 0
    assert index["path"] == hybrid["index"]["path"]  # modes share one scratch index
    assert "nDCG@10" in first_run["stdout"] and "hybrid" in first_run["stdout"]


def test_eval_writes_html_json_and_trec_runs(first_run: dict, beir: Path) -> None:
    out = first_run["work"] / "out"
    html = (out / f"{beir.name}-test.html").read_text()
    assert '<table id="results">' in html and "<td>lexical</td>" in html and "<td>hybrid</td>" in html
    assert html.count("<svg") == 2 and "http" not in html.replace("http://www.w3.org/2000/svg", "")
    assert f"{first_run['report']['runs'][0]['metrics']['nDCG@10']:.3f}" in html
    trec = (out / "runs" / f"{beir.name}-test-lexical.trec").read_text().splitlines()
    assert trec[0].split()[:4] == ["q1", "Q0", "d3", "1"] and trec[0].split()[5] == "lexical"


def test_second_run_reuses_the_scratch_index(first_run: dict, beir: Path) -> None:
    done = ragloom("eval", str(beir), "--mode", "dense", "--out", "out2", "--cache-dir", "cache", "--quiet",
                   cwd=first_run["work"])
    assert done.returncode == 0, done.stderr
    index = json.loads((first_run["work"] / "out2" / f"{beir.name}-test.json").read_text())["runs"][0]["index"]
    assert index["reused"] is True
    assert index["chunks_embedded"] == 0 and index["tokens_embedded"] == 0
    assert index["build_tokens"] == first_run["report"]["runs"][0]["index"]["build_tokens"]
    assert "reused" in done.stdout


def test_corpus_shards_are_rewritten_only_when_changed(beir: Path, tmp_path: Path) -> None:
    folder, count = write_corpus_shards(beir / "corpus.jsonl", tmp_path / "shards", per_shard=3)
    assert count == 8 and sorted(p.name for p in folder.iterdir()) == [f"part-0000{i}.jsonl" for i in range(3)]
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    write_corpus_shards(beir / "corpus.jsonl", folder, per_shard=3)
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == stamps
    smaller = tmp_path / "smaller.jsonl"
    smaller.write_text("".join((beir / "corpus.jsonl").read_text().splitlines(keepends=True)[:4]))
    write_corpus_shards(smaller, folder, per_shard=3)
    assert sorted(p.name for p in folder.iterdir()) == ["part-00000.jsonl", "part-00001.jsonl"]


GUIDE = """# Installation

Install the package with pip. Everything ships offline.

# Testing

## Mocking boundaries

Stub only external services at the boundary; never mock your own modules.

## Verification

Phase one verification checks every function and method with an AST walk and grep.
"""

CASES = """
- query: how do I stub external services at the boundary
  keywords: [Stub, boundary]
  metadata: {section: Mocking boundaries}
# the specification's own field names
- query: Phase one verification of every function and method
  expected_keywords: [function, method, AST, grep]
  expected_section: Verification
- query: sourdough starter
  keywords: [yeast]
  where: {doc_id: notes.txt}
- query: install the package with pip
  keywords: [conda]
"""


def test_keyword_test_set(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GUIDE)
    (docs / "notes.txt").write_text("Sourdough bread needs a starter of wild yeast and flour, fed daily.\n")
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "md.yaml").write_text("chunking:\n  strategy: markdown\n")
    done = ragloom("eval", "docs", "--keywords", "cases.yaml", "--config", "md.yaml", "--out", "out",
                   "--cache-dir", "cache", "--fail-under", "0.9", "--quiet", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # 75% < 90%
    [result] = json.loads((tmp_path / "out" / "keywords-cases.json").read_text())
    assert result["cases"] == 4
    assert result["top1_accuracy"] == pytest.approx(0.75) and result["topk_accuracy"] == pytest.approx(0.75)
    [failure] = result["failures"]
    assert failure["query"] == "install the package with pip"
    assert failure["top1_unmet"] == ["keyword 'conda'"] and failure["first_passing_rank"] is None
    assert "conda" in done.stdout and "75.0%" in done.stdout

    # Runs that differ only in search settings share the scratch index (and the model).
    both = ragloom("eval", "docs", "--keywords", "cases.yaml", "--config", "md.yaml", "--mode", "hybrid",
                   "--mode", "lexical", "--out", "out2", "--cache-dir", "cache", "--quiet", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    runs = json.loads((tmp_path / "out2" / "keywords-cases.json").read_text())
    assert [r["name"] for r in runs] == ["hybrid", "lexical"] and all(r["cases"] == 4 for r in runs)
    assert runs[0]["top1_accuracy"] == result["top1_accuracy"]
    assert len(list((tmp_path / "cache").iterdir())) == 1


def test_keyword_files_in_jsonl_and_their_errors(tmp_path: Path) -> None:
    good = tmp_path / "cases.jsonl"
    good.write_text('{"query": "q", "expected_keywords": ["a"], "expected_phase": 1, "min_relevance": 0.8}\n')
    [case] = load_keyword_cases(good)
    assert (case.keywords, case.metadata, case.min_score) == (["a"], {"phase": 1}, 0.8)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- query: q\n  keywords: [a]\n- query: r\n  keyword: [b]\n")
    with pytest.raises(ValueError, match=r"case 2: keyword"):
        load_keyword_cases(bad)


def test_a_query_the_index_refuses_is_recorded_and_the_eval_goes_on(beir: Path, tmp_path: Path) -> None:
    """One query over ``search.max_query_chars`` is an error of that query in the report, not of the run."""
    long_set = tmp_path / "long-beir"
    shutil.copytree(beir, long_set)
    with open(long_set / "queries.jsonl", "a") as f:
        f.write(json.dumps({"_id": "q6", "text": "magma " * 4000}) + "\n")  # 24,000 characters
    with open(long_set / "qrels" / "test.tsv", "a") as f:
        f.write("q6\td3\t1\n")
    done = ragloom("eval", str(long_set), "--mode", "lexical", "--out", "out", "--cache-dir", "cache", "--quiet",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "long-beir-test.json").read_text())
    run = report["runs"][0]
    assert list(run["errors"]) == ["q6"] and "search.max_query_chars" in run["errors"]["q6"]
    assert run["per_query"]["nDCG@10"]["q6"] == 0.0 and run["per_query"]["nDCG@10"]["q2"] == 1.0
    assert "1 queries refused" in done.stdout
