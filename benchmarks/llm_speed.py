"""llama.cpp generation speed of the packaged SmolLM2-135M-Instruct (Q4_1) with 1 and 2 threads.

Runs through ragloom's ``llamacpp`` provider, streaming, at temperature 0. Prompt
processing is the time to the first token; generation speed counts the tokens after
it. Thread counts are interleaved round by round so machine load hits both alike.

    python benchmarks/llm_speed.py [--tokens 128] [--rounds 3] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from ragloom.config import LLMConfig
from ragloom.generate import create_llm

PROMPT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Write a long, detailed story about a robot who learns to paint."},
]


def measure(llm, max_tokens: int) -> tuple[float, float, int]:
    """(seconds to first token, generated tokens per second after it, tokens generated)."""
    started = time.perf_counter()
    first = None
    count = 0
    for _ in llm.stream(PROMPT, max_tokens=max_tokens):  # llama.cpp streams one token per piece
        count += 1
        if first is None:
            first = time.perf_counter()
    ended = time.perf_counter()
    assert first is not None, "the model generated nothing"
    return first - started, (count - 1) / (ended - first), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    models = {n: create_llm(LLMConfig(threads=n, context_size=2048)) for n in args.threads}
    for llm in models.values():  # warm-up
        llm.complete(PROMPT, max_tokens=8)
    results: dict[int, list[tuple[float, float, int]]] = {n: [] for n in models}
    for _ in range(args.rounds):
        for threads, llm in models.items():
            results[threads].append(measure(llm, args.tokens))

    load = os.getloadavg()
    model_id = next(iter(models.values())).model_id
    print(f"{model_id}, {args.tokens} tokens max, temperature 0, {args.rounds} interleaved rounds; "
          f"load average at end {load[0]:.1f} / {load[1]:.1f}")
    print()
    print("| threads | tokens generated | time to first token s, median (prompt cached after warm-up) | generation tokens/s, median | best |")
    print("|---|---|---|---|---|")
    for threads, runs in results.items():
        speeds = [speed for _, speed, _ in runs]
        print(f"| {threads} | {runs[0][2]} | {statistics.median(r[0] for r in runs):.2f} | "
              f"{statistics.median(speeds):.1f} | {max(speeds):.1f} |")


if __name__ == "__main__":
    main()
