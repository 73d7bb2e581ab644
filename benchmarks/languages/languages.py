"""Every language of XQuAD (developers' half): lexical, dense and hybrid nDCG@10 in one table.

    python -m benchmarks languages --label before --cache /tmp/xq-before     # today's code
    python -m benchmarks languages --label after                              # after issue 31
    python -m benchmarks languages --compare before after                     # the two side by side
    python -m benchmarks languages --label pg --store postgres --cache /tmp/xq  # the postgres store

With ``--store postgres`` each dataset is an index of its own in a PostgreSQL started from the
``pgserver`` wheel (or the one ``--pg-url`` names); with the same ``--cache`` as an embedded run,
the vectors that run embedded are reused, so the two stores differ only in what they store and
how they search (the lexical side above all).

Each dataset of ``xquad-dev`` (the 12 languages, ``mixed``, the ``xling-en-*`` sets) is
evaluated as ``ragloom eval DATASET --split dev -p lexical -p dense -p hybrid`` would, with
the default config (so the index chooses its own embedder), and the results are written to
``benchmarks/results/languages-<label>.json``; the table is printed in Markdown. A dataset
already in that file is not run again (delete the file, or pass --rerun, to measure afresh).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from ragloom.config import Config
from ragloom.embed.base import Embedder
from ragloom.eval.beir import load_beir
from ragloom.eval.runner import RunSpec, evaluate_beir
from ragloom.eval.scratch import default_cache_dir

from .. import harness

SHARED = harness.DATASETS
XQUAD = SHARED / "xquad-dev"
RESULTS = harness.RESULTS
LANGUAGES = ["en", "de", "es", "el", "ru", "tr", "ar", "vi", "th", "zh", "hi", "ro"]
DATASETS = [*LANGUAGES, "mixed", *(f"xling-en-{code}" for code in LANGUAGES if code != "en")]
MODES = ["lexical", "dense", "hybrid"]


def measure(name: str, cache: Path, config: Config, modes: list[str] = MODES, row: dict | None = None,
            every: int = 1) -> dict:
    data = load_beir(XQUAD / name, "dev")
    if every > 1:  # a fixed subset of the questions: every ``every``-th, in file order
        kept = list(data.queries)[::every]
        data = dataclasses.replace(data, queries={q: data.queries[q] for q in kept},
                                   qrels={q: data.qrels[q] for q in kept if q in data.qrels})
    own = XQUAD / name.removeprefix("xling-en-") / "corpus.jsonl"
    if name.startswith("xling-en-") and own.read_bytes() == data.corpus_path.read_bytes():
        data = dataclasses.replace(data, corpus_path=own)  # the same paragraphs: the same scratch index
    specs = [RunSpec(mode, config, mode) for mode in modes]
    started = time.perf_counter()
    result = evaluate_beir(data, specs, cache, k=100)
    build = result.runs[0].build
    before = row or {}
    return {
        "queries": result.queries,
        "nDCG@10": {**before.get("nDCG@10", {}), **{run.name: round(run.means()["nDCG@10"], 4) for run in result.runs}},
        "recall@10": {**before.get("recall@10", {}),
                      **{run.name: round(run.means()["recall@10"], 4) for run in result.runs}},
        "embedder": _embedder_of(Path(build.path), config),
        "build_seconds": round(build.build_seconds, 1), "build_tokens": build.build_tokens,
        "tokens_per_second": round(build.tokens_per_second, 1), "seconds": round(time.perf_counter() - started, 1),
        "load_average": round(harness.load_average(), 2),
    }


class VectorMemo:
    """Vectors kept across runs and datasets (and in a file between invocations), so that a slow
    embedder embeds each text once: the same 632 questions recur in dense, hybrid and every
    ``xling-en-*`` set, and ``mixed`` holds the very paragraphs of the 12 languages. Quality figures
    are unchanged; the latency and ingest-time columns then leave out what was memoised, so they
    are not reported here (``ingest_speed`` measures the embedders' speed)."""

    def __init__(self, file: Path) -> None:
        """Saves to ``file``; reads every ``vectors*.npz`` beside it (runs side by side keep one each)."""
        self.file = file
        self.vectors: dict[str, np.ndarray] = {}
        for saved_file in sorted(file.parent.glob("vectors*.npz")):
            with np.load(saved_file) as saved:
                self.vectors.update(zip(json.loads(str(saved["keys"])), saved["vectors"]))

    def seed(self, cache: Path) -> None:
        """The chunk vectors of the scratch indexes already built under ``cache``."""
        from ragloom.index import Index

        for folder in sorted(cache.glob("*/index")):
            if not (folder / "ragloom.sqlite").is_file():  # another store's (postgres keeps nothing here)
                continue
            with Index.open(folder, Config(index=str(folder)), create=False) as index:
                model = str((index.store.embedder_info() or {}).get("model_id"))
                chunks = list(index.store.iter_chunks())
                found = index.store.cached_vectors([c.content_hash for c in chunks])
                for chunk in chunks:
                    if chunk.content_hash in found:
                        self.vectors[f"{model}\tdocument\t{chunk.text}"] = found[chunk.content_hash]

    def install(self) -> None:
        embed_many = Embedder._embed_many
        vectors = self.vectors

        def memoised(embedder: Embedder, texts, kind, progress):  # noqa: ANN001, ANN202
            keys = [f"{embedder.model_id}\t{kind}\t{text}" for text in texts]
            missing = list(dict.fromkeys(k for k in keys if k not in vectors))
            if missing:
                fresh = embed_many(embedder, [key.split("\t", 2)[2] for key in missing], kind, None)
                vectors.update(zip(missing, fresh))
            if progress is not None:
                progress(len(texts))
            return np.stack([vectors[k] for k in keys]) if keys else embed_many(embedder, texts, kind, progress)

        Embedder._embed_many = memoised  # type: ignore[method-assign]

    def save(self) -> None:
        keys = list(self.vectors)
        if keys:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.file, keys=json.dumps(keys), vectors=np.stack([self.vectors[k] for k in keys]))


def _embedder_of(index: Path, config: Config) -> str:
    from ragloom.index import Index

    with Index.open(index, config.model_copy(update={"index": str(index)}), create=False) as opened:
        return str((opened.store.embedder_info() or {}).get("model_id", "?"))


def table(results: dict[str, dict]) -> str:
    lines = ["| dataset | embedder | lexical | dense | hybrid |", "|---|---|---|---|---|"]
    for name in DATASETS:
        if name in results:
            row = results[name]
            scores = " | ".join(f"{row['nDCG@10'][mode]:.3f}" if mode in row["nDCG@10"] else "-" for mode in MODES)
            lines.append(f"| {name} | {row['embedder']} | {scores} |")
    return "\n".join(lines)


def tables(results: list[dict[str, dict]]) -> str:
    """For ``python -m benchmarks report``: one result file, its table; two, the first against the
    second (as ``--compare``)."""
    if len(results) == 2:
        return compare(*results)
    return "\n\n".join(table(result) for result in results)


def compare(before: dict[str, dict], after: dict[str, dict]) -> str:
    lines = ["| dataset | lexical before | lexical after | dense before | dense after | hybrid before | hybrid after |",
             "|---|---|---|---|---|---|---|"]
    for name in DATASETS:
        if name in before and name in after:
            cells = [f"{side[name]['nDCG@10'][mode]:.3f}" for mode in MODES for side in (before, after)]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after", help="results go to benchmarks/results/languages-LABEL.json")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--cache", type=Path, default=None, help="scratch indexes (default: the eval cache/LABEL)")
    parser.add_argument("--rerun", action="store_true", help="measure datasets already in the results file again")
    parser.add_argument("--modes", nargs="+", default=MODES, choices=MODES,
                        help="with --rerun: measure only these again (e.g. hybrid after a fusion change)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print two labels side by side")
    parser.add_argument("--mixed-every", type=int, default=1,
                        help="mixed: only every N-th of its 7,584 questions (a fixed subset, to save time)")
    parser.add_argument("--merge", nargs="+", metavar="LABEL", help="add these labels' results to --label's")
    parser.add_argument("--store", choices=["embedded", "postgres"], default="embedded")
    parser.add_argument("--pg-url", default=None, help="--store postgres: this database instead of a pgserver one")
    parser.add_argument("--pg-language", default="ragloom",
                        help="--store postgres: store.postgres.language (ragloom, or a text search configuration)")
    parser.add_argument("--pg-dir", type=Path, default=Path("/tmp/ragloom-bench-pg-languages"),
                        help="--store postgres: the pgserver data folder (kept between runs)")
    parser.add_argument("--embedder", default=None,
                        help="an embedder provider for every index (embeddinggemma) instead of the default choice; "
                        "use its own --label and --cache")
    parser.add_argument("--alpha", type=float, default=None, help="hybrid's dense weight (search.alpha) instead of "
                        "the default; the indexes are the same, so --cache may be another label's")
    parser.add_argument("--fusion", choices=["convex", "rrf"], default=None, help="hybrid's fusion (search.fusion) "
                        "instead of the default convex")
    parser.add_argument("--memo", default=None, help="the vectors file of this label under --cache (default: "
                        "--label's): another run's, so that its query vectors are not embedded again")
    args = parser.parse_args()
    if args.merge:
        file = RESULTS / f"languages-{args.label}.json"
        merged = json.loads(file.read_text()) if file.is_file() else {}
        for label in args.merge:  # in order: a later label's modes replace an earlier one's
            for name, row in json.loads((RESULTS / f"languages-{label}.json").read_text()).items():
                old = merged.get(name, {})
                merged[name] = {**old, **row, **{key: {**old.get(key, {}), **row[key]} for key in ("nDCG@10", "recall@10")}}
        file.write_text(json.dumps(merged, indent=2))
        print(table(merged))
        return
    if args.compare:
        before, after = (json.loads((RESULTS / f"languages-{label}.json").read_text()) for label in args.compare)
        print(compare(before, after))
        return
    file = RESULTS / f"languages-{args.label}.json"
    results = json.loads(file.read_text()) if file.is_file() else {}
    cache = args.cache or default_cache_dir() / f"languages-{args.label}"
    memo = VectorMemo(cache / f"vectors-{args.memo or args.label}.npz")
    memo.seed(cache)
    memo.install()
    server = None
    if args.store == "postgres" and not args.pg_url:
        from ragloom.testing.postgres import PostgresServer

        server = PostgresServer(args.pg_dir, keep=True).start()
    for name in args.datasets:
        if name in results and not args.rerun:
            continue
        every = args.mixed_every if name == "mixed" else 1
        settings: dict = {"embedder": {"provider": args.embedder}} if args.embedder else {}
        if args.alpha is not None or args.fusion:
            settings["search"] = {key: value for key, value in (("alpha", args.alpha), ("fusion", args.fusion))
                                  if value is not None}
        if args.store == "postgres":
            url = args.pg_url or server.url()  # type: ignore[union-attr]
            settings["store"] = {"backend": "postgres", "postgres": {
                "url": url, "index": f"xq_{args.pg_language}_" + name.replace("-", "_"),
                "language": args.pg_language}}
        config = Config.from_dict(settings)
        results[name] = measure(name, cache, config, args.modes, results.get(name), every)
        file.write_text(json.dumps(results, indent=2))
        memo.save()
        row = results[name]
        print(f"{name}: {row['nDCG@10']} ({row['embedder']}, {row['seconds']} s, load {row['load_average']})",
              flush=True)
    print(table(results))


if __name__ == "__main__":
    main()
