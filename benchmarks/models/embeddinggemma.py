"""EmbeddingGemma against bge-small: ingest rate and peak memory on the same SciFact documents, and
how close each ONNX form of EmbeddingGemma is to the sentence-transformers fp32 model.

    python -m benchmarks embeddinggemma ingest [--docs 2000]        # one ingest per embedder, in turn
    python -m benchmarks embeddinggemma fidelity [--texts 200]       # needs torch + sentence-transformers

``ingest`` runs each ingest in a child process (``ragloom ingest`` of the first N abstracts, written
as JSONL shards of 100) and samples the child's resident memory every 0.1 s: wall time, chunks/s,
tokens/s, peak RSS. ``fidelity`` embeds N SciFact abstracts with sentence-transformers (the model
folder kept by ``--source``, the unpacked safetensors) and with each ONNX form written by
``models/gemma_onnx.py``: fp32, INT8 blocks (what ragloom installs) and onnxruntime's dynamic INT8
(per tensor, and per channel), and prints the cosine to the reference and the tokens/s of each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import harness

SCIFACT = harness.SCIFACT
EMBEDDERS = {"bge-small-en (default)": {}, "embeddinggemma-300m": {"provider": "embeddinggemma"}}


def _shards(folder: Path, docs: int, shard: int = 100) -> None:
    folder.mkdir(parents=True)
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as lines:
        taken = [line for _, line in zip(range(docs), lines)]
    for start in range(0, len(taken), shard):
        (folder / f"shard-{start // shard:04d}.jsonl").write_text("".join(taken[start : start + shard]), encoding="utf-8")


def ingest(docs: int) -> None:
    rows = []
    for name, embedder in EMBEDDERS.items():
        work = Path(tempfile.mkdtemp(prefix="ragloom-gemma-bench-"))
        try:
            _shards(work / "docs", docs)
            (work / "ragloom.yaml").write_text(json.dumps({"embedder": embedder} if embedder else {}))
            command = [sys.executable, "-m", "ragloom", "--index", str(work / "index"), "--config",
                       str(work / "ragloom.yaml"), "ingest", str(work / "docs"), "--json"]
            started = time.perf_counter()
            child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            peak = 0.0
            while child.poll() is None:
                peak = max(peak, harness.tree_rss_mb(child.pid))
                time.sleep(0.1)
            seconds = time.perf_counter() - started
            out = child.stdout.read() if child.stdout else ""
            if child.returncode != 0:
                raise SystemExit(f"{name}: ragloom ingest failed ({child.returncode}): {out[-500:]}")
            report = json.loads(out)
            chunks, tokens = report.get("chunks_embedded", 0), report.get("tokens_embedded", 0)
            rows.append((name, chunks, tokens, seconds, chunks / seconds, tokens / seconds, peak))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    load = harness.load_average()
    print(f"SciFact, first {docs} abstracts, `ragloom ingest` with each embedder; load average {load:.2f} at the end")
    print("| embedder | chunks | tokens | wall s | chunks/s | tokens/s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for name, chunks, tokens, seconds, cps, tps, peak in rows:
        print(f"| {name} | {chunks:,} | {tokens:,} | {seconds:.1f} | {cps:.2f} | {tps:,.0f} | {peak:,.0f} |")
    base = rows[0]
    for row in rows[1:]:
        print(f"\n{row[0]} / {base[0]}: {base[3] and row[3] / base[3]:.1f}x the wall time, "
              f"{row[6] / base[6]:.1f}x the peak memory")


def fidelity(source: Path, texts: int) -> None:
    import numpy as np
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    from ragloom.models.gemma_onnx import convert

    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as lines:
        docs = [json.loads(line) for _, line in zip(range(texts), lines)]
    prompt = "title: none | text: "
    inputs = [prompt + d["title"] + "\n" + d["text"] for d in docs]
    model = SentenceTransformer(str(source), device="cpu")
    model.max_seq_length = 512
    reference = model.encode(inputs, batch_size=1, normalize_embeddings=True)
    work = Path(tempfile.mkdtemp(prefix="ragloom-gemma-fidelity-"))
    try:
        forms = {"fp32": convert(source, work / "fp32", quantize=False),
                 "INT8 blocks of 32 (installed)": convert(source, work / "q8", quantize=True)}
        for label, per_channel in (("dynamic INT8, per tensor", False), ("dynamic INT8, per channel", True)):
            target = work / f"dyn{int(per_channel)}.onnx"
            quantize_dynamic(str(forms["fp32"]), str(target), weight_type=QuantType.QInt8, per_channel=per_channel,
                             use_external_data_format=True)
            forms[label] = target
        tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        tokenizer.enable_truncation(512)
        encoded = [tokenizer.encode(text).ids for text in inputs]
        tokens = sum(map(len, encoded))
        print(f"{texts} SciFact abstracts (up to 512 tokens, {tokens:,} tokens), one text per run, one thread; "
              f"load average {harness.load_average():.2f}")
        print("| form | size MB | mean cosine | min cosine | tokens/s |")
        print("|---|---|---|---|---|")
        for label, path in forms.items():
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            started = time.perf_counter()
            vectors = []
            for ids in encoded:
                feed = np.array([ids], dtype=np.int64)
                vector = session.run(None, {"input_ids": feed, "attention_mask": np.ones_like(feed)})[0][0]
                vectors.append(vector / np.linalg.norm(vector))
            rate = tokens / (time.perf_counter() - started)
            cosines = (np.stack(vectors) * reference).sum(1)
            size = sum(f.stat().st_size for f in path.parent.iterdir() if f.name.startswith(path.stem)) / 1e6
            print(f"| {label} | {size:,.0f} | {cosines.mean():.4f} | {cosines.min():.4f} | {rate:,.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    run = sub.add_parser("ingest")
    run.add_argument("--docs", type=int, default=2000)
    check = sub.add_parser("fidelity")
    check.add_argument("--source", type=Path, required=True, help="the unpacked model_download/ folder")
    check.add_argument("--texts", type=int, default=200)
    args = parser.parse_args()
    if args.what == "ingest":
        ingest(args.docs)
    else:
        fidelity(args.source, args.texts)


if __name__ == "__main__":
    main()
