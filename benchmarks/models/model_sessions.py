"""How the packaged models run: one session with every thread, or single-threaded sessions side by side.

Embeds the first N SciFact abstracts (title, blank line, text, as ragloom's JSONL loader builds
them; default 900, about 293k tokens) with the packaged bge-small INT8 ONNX run each of these
ways, in interleaved rounds so that the machine's state hits every way alike:

- one session, all threads, one text at a time (the default until issue 26);
- one session, padded batches of 32 sorted by length;
- one session, one thread;
- N single-threaded sessions side by side, one text each (the default now);
- one single-threaded session run by N threads at once.

Reports tokens/s (tokens as the model sees them, with [CLS] and [SEP], truncated at 512), the
ratio to the first way, and whether the vectors are bit-identical to the first way's (else the
largest difference). Then the same for the cross-encoder (ms-marco-MiniLM-L-12-v2 INT8), scoring
each query of SciFact's train split against 20 abstracts, as the rerank stage does. Last, the
memory one more session costs (resident set after a 512-token warm-up, in a fresh process).

    python -m benchmarks model_sessions [--docs 900] [--rounds 2] [--pairs-queries 60] [--only embedder|cross-encoder]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ragloom.embed.base import normalize
from ragloom.embed.onnx import OnnxEmbedder
from ragloom.models import packaged_model_dir
from ragloom.models.cross_encoder import CrossEncoder
from ragloom.models.sessions import usable_cores

from .. import harness
from .embed_throughput import load_texts

SCIFACT = harness.SCIFACT


def abstracts(limit: int) -> list[str]:
    """Title, blank line, text: as ragloom's JSONL loader builds a SciFact abstract."""
    return load_texts(SCIFACT / "corpus.jsonl", limit, between="\n\n")


def embedders(cores: int) -> dict[str, Callable[[list[str]], np.ndarray]]:
    folder = packaged_model_dir("bge_small_en")

    def make(**kw) -> OnnxEmbedder:
        return OnnxEmbedder(folder, "bge-small-en-v1.5", **kw)

    shared = make(threads=1, sessions=1)

    def one_session_many_threads(texts: list[str]) -> np.ndarray:
        """Every text on its own, ``cores`` of them at once through the one session."""
        with shared._pool.session() as session, ThreadPoolExecutor(cores) as workers:
            runs = workers.map(lambda t: session.run(None, shared.feeds([t], "document"))[0][:, 0, :], texts)
            return normalize(np.concatenate(list(runs)))

    return {
        f"one session, {cores} threads, one text at a time (before)": make(threads=cores, sessions=1).embed_documents,
        f"one session, {cores} threads, padded batches of 32":
            make(threads=cores, sessions=1, per_text=False).embed_documents,
        "one session, 1 thread, one text at a time": make(threads=1, sessions=1).embed_documents,
        f"{cores} sessions x 1 thread side by side, one text each (now)":
            make(threads=cores, sessions=cores).embed_documents,
        f"one 1-thread session run by {cores} threads at once": one_session_many_threads,
    }


def timed_rounds(ways: dict[str, Callable[[], np.ndarray]], rounds: int) -> dict[str, tuple[list[float], np.ndarray]]:
    results: dict[str, tuple[list[float], np.ndarray]] = {name: ([], np.empty(0)) for name in ways}
    for round_ in range(rounds):
        for name, run in ways.items():
            started = time.perf_counter()
            values = run()
            results[name][0].append(time.perf_counter() - started)
            if round_ == 0:
                results[name] = (results[name][0], values)
            print(f"  round {round_ + 1}: {name}: {results[name][0][-1]:.1f} s", file=sys.stderr, flush=True)
    return results


def table(results: dict[str, tuple[list[float], np.ndarray]], work: float, unit: str) -> str:
    lines = [f"| way | {unit}/s (median) | seconds per round | vs before | values vs before |", "|---|---|---|---|---|"]
    base_name = next(iter(results))
    base_seconds = float(np.median(results[base_name][0]))
    reference = results[base_name][1]
    for name, (seconds, values) in results.items():
        median = float(np.median(seconds))
        same = "bit-identical" if np.array_equal(values, reference) else \
            f"differ by up to {float(np.max(np.abs(values - reference))):.4f}"
        lines.append(f"| {name} | {work / median:,.0f} | {', '.join(f'{s:.1f}' for s in seconds)} | "
                     f"{base_seconds / median:.2f}x | {same} |")
    return "\n".join(lines)


def cross_encoder_ways(cores: int, queries: list[str], passages: list[str]) -> dict[str, Callable[[], np.ndarray]]:
    ways = {
        f"one session, {cores} threads, padded batches of 16 (before)":
            CrossEncoder(threads=cores, sessions=1, batch_size=16),
        f"one session, {cores} threads, each pair alone": CrossEncoder(threads=cores, sessions=1, batch_size=1),
        f"{cores} sessions x 1 thread, padded batches of 16 side by side":
            CrossEncoder(threads=cores, sessions=cores, batch_size=16),
        f"{cores} sessions x 1 thread, each pair alone, side by side (now)":
            CrossEncoder(threads=cores, sessions=cores, batch_size=1),
    }

    def scores(model: CrossEncoder) -> np.ndarray:
        return np.concatenate([model.logits(q, passages[i * 20 : i * 20 + 20]) for i, q in enumerate(queries)])

    return {name: (lambda m=model: scores(m)) for name, model in ways.items()}


def session_memory() -> str:
    """Resident MB after loading and warming one, then two single-threaded sessions (fresh process)."""
    code = """
import numpy as np
from benchmarks.models.embed_throughput import load_texts

from ragloom.embed.base import normalize
from ragloom.embed.onnx import OnnxEmbedder
from ragloom.models import packaged_model_dir
def rss():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')) / 1024
e = OnnxEmbedder(packaged_model_dir('bge_small_en'), 'bge', threads=2, sessions=2)
before = rss()
text = 'word ' * 500
feeds = e.feeds([text], 'document')
with e._pool.session() as a:
    a.run(None, feeds)
one = rss()
with e._pool.session() as a, e._pool.session() as b:
    b.run(None, feeds)
two = rss()
print(f'{before:.0f} {one:.0f} {two:.0f}')
"""
    before, one, two = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                      check=True).stdout.split()
    return (f"resident MB: model loaded {before}, first session warmed (512 tokens) {one}, "
            f"second session warmed {two}: one more session costs {int(two) - int(one)} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=900)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pairs-queries", type=int, default=60, help="queries scored against 20 abstracts each")
    parser.add_argument("--only", choices=("embedder", "cross-encoder"), help="measure one model only")
    args = parser.parse_args()
    cores = usable_cores()
    if args.only != "cross-encoder":
        measure_embedder(cores, args)
    if args.only != "embedder":
        measure_cross_encoder(cores, args)
    print("\n" + session_memory())


def measure_embedder(cores: int, args: argparse.Namespace) -> None:
    texts = abstracts(args.docs)
    ways = embedders(cores)
    counter = OnnxEmbedder(packaged_model_dir("bge_small_en"), "bge-small-en-v1.5", threads=1, sessions=1)
    tokens = sum(min(counter.count_tokens(t) + 2, 512) for t in texts)
    for embed in ways.values():  # warm-up: every session made, arenas grown
        embed(texts[:8] * cores)
    print(f"Embedding {len(texts)} SciFact abstracts, {tokens:,} tokens, {cores} usable cores, {args.rounds} rounds")
    print(table(timed_rounds({n: (lambda e=e: e(texts)) for n, e in ways.items()}, args.rounds), tokens, "tokens"))


def measure_cross_encoder(cores: int, args: argparse.Namespace) -> None:
    queries = [json.loads(line)["text"] for _, line in zip(range(args.pairs_queries),
                                                            open(SCIFACT / "queries.jsonl", encoding="utf-8"))]
    passages = abstracts(20 * len(queries))
    ce = cross_encoder_ways(cores, queries, passages)
    for run in ce.values():
        run()
    print(f"\nCross-encoder: {len(queries)} queries x 20 abstracts = {20 * len(queries)} pairs, {args.rounds} rounds")
    print(table(timed_rounds(ce, args.rounds), 20 * len(queries), "pairs"))


if __name__ == "__main__":
    main()
