"""llama.cpp generation speed of a local model with 1 and 2 threads, and time to first token per context size.

Runs through ragloom's ``llamacpp`` provider, streaming, at temperature 0. Prompt
processing is the time to the first token; generation speed counts the tokens after
it. Thread counts are interleaved round by round so machine load hits both alike.
``--context 0 500 1000`` also measures time to first token with that many tokens of
(sample-corpus) context in the prompt; each prompt starts with a new round number, so
llama.cpp's prefix cache cannot skip the work.

    python -m benchmarks llm_speed [--model qwen2.5-coder-0.5b] [--tokens 128] [--rounds 3] [--threads 1 2]
                                   [--context 0 500 1000 1500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from ragloom.config import LLMConfig
from ragloom.generate import create_llm

from .. import harness

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


SAMPLES = harness.REPO / "examples" / "sample_docs"


def context_prompt(llm, tokens: int, round_number: int) -> list[dict[str, str]]:
    """A question over ``tokens`` tokens (the model's own count) of sample-corpus text."""
    words = " ".join(p.read_text(encoding="utf-8", errors="ignore") for p in sorted(SAMPLES.glob("*.[mt]*"))).split()
    text, step = "", 40
    while tokens and llm.count_tokens(text) < tokens and step <= len(words):
        text = " ".join(words[: step])
        step += 40
    return [{"role": "system", "content": f"Round {round_number}. Answer from the sources."},
            {"role": "user", "content": f"Sources:\n{text}\n\nQuestion: how do ROS 2 nodes communicate?"}]


def time_to_first_token(llm, messages) -> float:
    started = time.perf_counter()
    for _ in llm.stream(messages, max_tokens=1):
        break
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="llm.model (default: qwen2.5-coder-0.5b)")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--context", type=int, nargs="*", default=[],
                        help="context sizes in tokens for the time-to-first-token table")
    args = parser.parse_args()

    models = {n: create_llm(LLMConfig(model=args.model, threads=n, context_size=4096)) for n in args.threads}
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
    if args.context:
        ttft: dict[tuple[int, int], list[float]] = {}
        for round_number in range(args.rounds):
            for size in args.context:
                for threads, llm in models.items():
                    prompt = context_prompt(llm, size, round_number)
                    ttft.setdefault((threads, size), []).append(time_to_first_token(llm, prompt))
        print()
        print("| threads | " + " | ".join(f"TTFT s, {size} context tokens" for size in args.context)
              + " | s per 500 context tokens (slope) |")
        print("|---|" + "---|" * (len(args.context) + 1))
        for threads in models:
            medians = [statistics.median(ttft[(threads, size)]) for size in args.context]
            slope = ((medians[-1] - medians[0]) / (args.context[-1] - args.context[0]) * 500
                     if len(args.context) > 1 and args.context[-1] != args.context[0] else float("nan"))
            print(f"| {threads} | " + " | ".join(f"{m:.2f}" for m in medians) + f" | {slope:.2f} |")


if __name__ == "__main__":
    main()
