"""Code searched as developers search it: symbols, pasted error messages, quoted messages.

Queries come from the packages' own syntax trees (``../shared/tools/devqueries/make_queries.py``):

- ``symbol``: a qualified name (``Parser.parse_set``, ``function``) -> the line of its ``def``/``class``
- ``error``: a raised exception's message pasted as is -> the line of the ``raise``
- ``quoted``: the same message in double quotes

A hit is right when it comes from that file and its ``[start_line, end_line]`` holds the line.
Each set of packages (a folder holding them, e.g. ``tune/rich``, ``tune/httpx``, ``tune/click``)
is ingested into one index with the default configuration and searched in the default mode
(or ``--mode``). Prints hit@1 and MRR@10 per kind for each set, and writes the JSON beside.

    python -m benchmarks dev_queries --set tune=/tmp/devq/tune --set held=/tmp/devq/held \
        [--work benchmarks/results/devq] [--mode code] [--fresh]

The packages used in BENCHMARKS.md: tune rich 15.0.0, httpx 0.28.1, click 8.5.1; held out
requests 2.34.2, attrs 26.1.0 (``attr`` and ``attrs``), jinja2 3.1.6 — each unpacked from its wheel
(``pip download --no-deps NAME``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ragloom import Config, Index

from .. import harness

TOOL = harness.REPO.parent / "shared" / "tools" / "devqueries" / "make_queries.py"
KINDS = ("symbol", "error", "quoted")


def make_queries(folder: Path, out: Path, per_kind: int, seed: int) -> list[dict]:
    if not out.exists():
        subprocess.run([sys.executable, str(TOOL), str(folder), str(out), "--per-kind", str(per_kind),
                        "--seed", str(seed)], check=True)
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def right(hit, query: dict) -> bool:
    start, end = hit.start_line, hit.end_line
    return (hit.source.replace("\\", "/").endswith("/" + query["file"]) and start is not None
            and end is not None and start <= query["line"] <= end)


def score(index: Index, queries: list[dict], mode: str | None, k: int = 10) -> tuple[dict, list[dict]]:
    per_kind: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    misses = []
    for query in queries:
        hits = index.search(query["query"], k=k, mode=mode)
        rank = next((hit.rank for hit in hits if right(hit, query)), None)
        per_kind[query["kind"]].append((1.0 if rank == 1 else 0.0, 1.0 / rank if rank else 0.0))
        if rank != 1:
            top = hits[0] if hits else None
            misses.append({**query, "rank": rank, "top": top and f"{top.source}:{top.start_line}-{top.end_line} "
                           f"{top.metadata.get('symbol', '')}"})
    table = {kind: {"n": len(values), "hit@1": sum(v[0] for v in values) / max(len(values), 1),
                    "MRR@10": sum(v[1] for v in values) / max(len(values), 1)} for kind, values in per_kind.items()}
    return table, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", default=[], help="NAME=FOLDER of packages (repeatable)")
    parser.add_argument("--work", default=str(harness.RESULTS / "devq"))
    parser.add_argument("--mode", default=None, help="a search preset (default: the configured mode)")
    parser.add_argument("--per-kind", type=int, default=120)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fresh", action="store_true", help="ingest into new indexes")
    parser.add_argument("--misses", type=int, default=0, help="print this many misses per set")
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.set) or {"tune": "/tmp/devq/tune", "held": "/tmp/devq/held"}
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, folder in sets.items():
        queries = make_queries(Path(folder), work / f"{name}.jsonl", args.per_kind, args.seed)
        path = work / f"index-{name}"
        if args.fresh and path.exists():
            shutil.rmtree(path)
        with Index.open(path, Config()) as index:
            started = time.perf_counter()
            report = index.ingest([Path(folder)])
            ingest_s = time.perf_counter() - started
            started = time.perf_counter()
            table, misses = score(index, queries, args.mode)
            results[name] = {"folder": folder, "chunks": index.store.count(), "ingest": report.summary(),
                             "ingest_seconds": round(ingest_s, 1), "query_seconds": round(time.perf_counter() - started, 1),
                             "kinds": table, "misses": misses}
    print(f"mode: {args.mode or 'default'}\n")
    print("| set | chunks | kind | queries | hit@1 | MRR@10 |\n|---|---|---|---|---|---|")
    for name, result in results.items():
        for kind, values in result["kinds"].items():
            print(f"| {name} | {result['chunks']:,} | {kind} | {values['n']} | {values['hit@1']:.3f} | "
                  f"{values['MRR@10']:.3f} |")
    for name, result in results.items():
        for miss in result["misses"][: args.misses]:
            print(f"{name} miss: {miss['kind']} {miss['query']!r} want {miss['file']}:{miss['line']} "
                  f"rank {miss['rank']} top {miss['top']}")
    (work / f"results-{args.mode or 'default'}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
