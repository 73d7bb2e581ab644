"""Ingest rate of a real Python package read as source code: files/s, chunks/s, and how many
files fell back to line chunks (a file tree-sitter could not parse).

Copies an installed pure-Python package (``rich`` by default) to a temporary folder, ingests it
into a fresh index with the default settings, and prints one table row.

    python -m benchmarks code_ingest_rate [--package rich]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from ragloom import Config, Index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--package", default="rich")
    args = parser.parse_args()
    package = Path(importlib.import_module(args.package).__file__).parent
    with tempfile.TemporaryDirectory(prefix="ragloom-code-rate-") as scratch:
        folder = Path(scratch) / args.package
        shutil.copytree(package, folder, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        files = [p for p in folder.rglob("*") if p.is_file()]
        lines = sum(p.read_text(errors="replace").count("\n") for p in files if p.suffix == ".py")
        with Index.open(Path(scratch) / "index", Config()) as index:
            started = time.perf_counter()
            report = index.ingest([folder])
            seconds = time.perf_counter() - started
            kinds: dict[str, Counter] = {}
            for chunk in index.store.iter_chunks():
                kinds.setdefault(chunk.source, Counter())[chunk.metadata.get("kind", "")] += 1
        read = len(report.added)
        fell_back = sum(1 for path, counts in kinds.items() if path.endswith(".py") and set(counts) == {"lines"})
        print("| package | files read | lines | chunks | seconds | files/s | chunks/s | embed share | line fallback |")
        print("|---|---|---|---|---|---|---|---|---|")
        print(f"| {args.package} | {read} of {len(files)} | {lines:,} | {report.chunks_written:,} | {seconds:.1f} | "
              f"{read / seconds:.1f} | {report.chunks_written / seconds:.1f} | "
              f"{report.embed_seconds / seconds:.0%} | {fell_back} of {sum(p.endswith('.py') for p in kinds)} .py files |")
        kind_totals = sum(kinds.values(), Counter())
        print(f"\nchunks by kind: {dict(kind_totals.most_common())}")
        print(f"skipped: {Counter(r.split(' (')[0] for r in report.skip_reasons.values())}")


if __name__ == "__main__":
    main()
