"""End-to-end ingest rate against the embedding model's own rate, in the same run.

Writes the first N SciFact abstracts as JSONL shards (as ``ragloom eval`` does), ingests them
into a fresh index with the default settings, then embeds exactly the chunk texts the ingest
produced with the same embedder, alone. The ratio of the two tokens/s figures is how close
ingest runs to the model's limit (issue 14's target: >= 90%).

    python -m benchmarks ingest_rate [--docs 1000] [--shard 100] [--rounds 1]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ragloom import Config, Index

from .. import harness

SCIFACT = harness.SCIFACT


def write_shards(corpus: Path, folder: Path, docs: int, shard: int) -> None:
    folder.mkdir(parents=True)
    with open(corpus, encoding="utf-8") as lines:
        taken = [line for _, line in zip(range(docs), lines)]
    for start in range(0, len(taken), shard):
        (folder / f"shard-{start // shard:04d}.jsonl").write_text("".join(taken[start : start + shard]), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--shard", type=int, default=100, help="documents per JSONL file")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for round_ in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="ragloom-ingest-rate-"))
        try:
            write_shards(args.dataset / "corpus.jsonl", work / "docs", args.docs, args.shard)
            with Index.open(work / "index", Config()) as index:
                started = time.perf_counter()
                report = index.ingest([work / "docs"])
                ingest_s = time.perf_counter() - started
                texts = [chunk.text for _, chunk in index.store.catalog.iter_chunks()]
                tokens = sum(chunk.token_count for _, chunk in index.store.catalog.iter_chunks())
                started = time.perf_counter()
                index.embedder.embed_documents(texts)
                raw_s = time.perf_counter() - started
            rows.append((round_ + 1, report.chunks_embedded, tokens, ingest_s, report.embed_seconds, raw_s))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"SciFact, first {args.docs} abstracts in shards of {args.shard}; default settings")
    print("| round | chunks | tokens | ingest s | embedding inside ingest s | model alone s | "
          "ingest tokens/s | model tokens/s | ingest / model |")
    print("|---|---|---|---|---|---|---|---|---|")
    for round_, chunks, tokens, ingest_s, embed_s, raw_s in rows:
        print(f"| {round_} | {chunks:,} | {tokens:,} | {ingest_s:.1f} | {embed_s:.1f} | {raw_s:.1f} | "
              f"{tokens / ingest_s:,.0f} | {tokens / raw_s:,.0f} | {raw_s / ingest_s:.0%} |")


if __name__ == "__main__":
    main()
