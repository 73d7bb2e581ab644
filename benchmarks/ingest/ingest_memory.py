"""Peak memory of ingesting one large single-line text file (issue 15, item 4).

A file of N MB of words on one line (no newline anywhere, a few non-ASCII characters so
Python stores it two bytes a character) is written to a scratch folder, then read in a
fresh process, either only as far as the chunks (`chunk`: load + chunk, seconds) or
through the ingest path with the model's forward pass replaced by constant vectors
(`ingest-no-model`: + store writes), or through a full `ragloom ingest` (`ingest`: + the
model, which for 50 MB is ~12M tokens, i.e. an hour or more on 2 cores). Peak RSS is the
child's ru_maxrss.

    python -m benchmarks ingest_memory --mb 5 50 --stage chunk
    python -m benchmarks ingest_memory --mb 50 --stage ingest-no-model
    python -m benchmarks ingest_memory --mb 50 --stage ingest      # the issue's target: <= 1 GB
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_WORDS = ["robot", "lidar", "planning", "the", "of", "and", "calibration", "x", "motion", "sensor", "a1", "é"]
_CHUNK_ONLY = """
import json, sys
from pathlib import Path
from ragloom.config import Config
from ragloom.embed import create_embedder
from ragloom.ingest.chunkers.base import create_chunker
from ragloom.ingest.loaders import load_file
config = Config()
embedder = create_embedder(config.embedder)
chunker = create_chunker(config.chunking, embedder.count_tokens, embedder.token_offsets)
chunks = [c for d in load_file(Path(sys.argv[1]), sys.argv[1]).documents for c in chunker.chunk(d)]
print(json.dumps({"chunks": len(chunks)}))
"""


# The real ingest path with the ONNX forward pass replaced by constant vectors: the peak RSS of
# everything but the model's activations. Since the embedder runs one text at a time these are
# small (a full ingest of a 0.5 MB file peaked at 229 MB); at batch 32 they were ~360-560 MB.
_NO_MODEL = """
import json, sys
import numpy as np
from ragloom import Config, Index
from ragloom.embed.onnx import OnnxEmbedder
OnnxEmbedder._embed_batch = lambda self, texts, kind: np.ones((len(texts), self.dimension), dtype=np.float32)
config = Config(index=sys.argv[2])
with Index.open(config.index, config) as index:
    report = index.ingest([sys.argv[1]])
print(json.dumps({"chunks": report.chunks_written}))
"""


def write_single_line(path: Path, megabytes: float) -> None:
    rng = random.Random(1)
    target = int(megabytes * 1_000_000)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            words = " ".join(rng.choice(_WORDS) for _ in range(10_000)) + " "
            out.write(words)
            written += len(words.encode("utf-8"))


def run_child(args: list[str], cwd: Path) -> tuple[float, float, str]:
    """Peak RSS (MB) and seconds of one child process, and its stdout."""
    started = time.perf_counter()
    env = {**os.environ, "RAGLOOM_INGEST__MAX_FILE_MB": "1000"}
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr}")
    # Children are run one at a time, so the high-water mark of all children is this one's
    # as long as sizes are given in increasing order.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return peak, seconds, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, nargs="+", default=[5.0], help="file sizes, increasing")
    parser.add_argument("--stage", choices=["chunk", "ingest-no-model", "ingest"], default="chunk")
    args = parser.parse_args()
    print("| file MB | stage | chunks | peak RSS MB | seconds |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ragloom-ingest-memory-") as scratch:
        root = Path(scratch)
        for megabytes in sorted(args.mb):
            folder = root / f"d{megabytes:g}"
            folder.mkdir()
            file = folder / "one-line.txt"
            write_single_line(file, megabytes)
            if args.stage == "chunk":
                peak, seconds, out = run_child([sys.executable, "-c", _CHUNK_ONLY, str(file)], root)
                chunks = json.loads(out)["chunks"]
            elif args.stage == "ingest-no-model":
                peak, seconds, out = run_child([sys.executable, "-c", _NO_MODEL, str(folder),
                                                str(root / f"ix{megabytes:g}")], root)
                chunks = json.loads(out)["chunks"]
            else:
                command = [sys.executable, "-m", "ragloom", "-i", str(root / f"ix{megabytes:g}"), "ingest",
                           str(folder), "--json"]
                peak, seconds, out = run_child(command, root)
                chunks = json.loads(out)["chunks_written"]
            print(f"| {file.stat().st_size / 1e6:.1f} | {args.stage} | {chunks} | {peak:.0f} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
