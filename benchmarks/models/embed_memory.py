"""Peak memory of embedding SciFact through ragloom's default ONNX path: whole abstracts against
ragloom's default chunks of the same abstracts.

Each variant runs in its own process, warmed up by the code that warms every peer in
benchmarks/peers/peers.py (one full batch of 512-token texts), then embeds the texts handed over 256 at a time, as the
peer wrappers hand them. Peak RSS is read after the warm-up and after the embedding.

    python -m benchmarks embed_memory [--docs 1024]
"""

from __future__ import annotations

import argparse
import json
import subprocess

from .. import harness

DATA = harness.SCIFACT / "corpus.jsonl"
HANDED_OVER = 256


def warmed_up_model():  # noqa: ANN201 - the packaged Embedder
    """The packaged model after one query and one full batch of 512-token texts (the warm-up the
    peers' benchmark used when this one was written; peer_tools no longer has it)."""
    from ragloom.config import EmbedderConfig
    from ragloom.embed import create_embedder

    embedder = create_embedder(EmbedderConfig())
    embedder.embed_query("warm up")
    embedder.embed_documents(["warm up " * 400] * embedder.batch_size)
    return embedder


def measure(variant: str, limit: int) -> dict[str, float]:
    from ragloom.config import ChunkingConfig
    from ragloom.ingest.chunkers.base import create_chunker
    from ragloom.ingest.loaders import load_file

    embedder = warmed_up_model()
    warm = harness.peak_rss_mb()
    documents = load_file(DATA, DATA.name).documents[:limit]  # title, blank line, abstract
    texts = [d.text for d in documents]
    if variant == "chunks":
        chunker = create_chunker(ChunkingConfig(), embedder.count_tokens, embedder.token_offsets)
        texts = [d.text[s.start : s.end] for d in documents for s in chunker.spans(d)]
    tokens = sum(min(embedder.count_tokens(t), 510) + 2 for t in texts)
    for start in range(0, len(texts), HANDED_OVER):
        embedder.embed_documents(texts[start : start + HANDED_OVER])
    return {"texts": len(texts), "tokens": tokens, "warm_mb": warm, "peak_mb": harness.peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1024)
    parser.add_argument("--variant", choices=["whole", "chunks"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.variant, args.docs)))
        return
    print(f"| {args.docs} SciFact abstracts as | texts | tokens | peak RSS after warm-up MB | peak RSS after embedding MB |")
    print("|---|---|---|---|---|")
    for variant in ("whole", "chunks"):
        out = subprocess.run(
            harness.command("embed_memory", "--docs", str(args.docs), "--variant", variant),
            check=True, capture_output=True, text=True,
        ).stdout
        row = json.loads(out.strip().splitlines()[-1])
        label = "whole abstracts" if variant == "whole" else "ragloom's default chunks (256 tokens, 32 overlap)"
        print(f"| {label} | {row['texts']:,} | {row['tokens']:,} | {row['warm_mb']:,.0f} | {row['peak_mb']:,.0f} |")


if __name__ == "__main__":
    main()
