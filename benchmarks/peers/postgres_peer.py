"""ragloom's postgres store against LangChain's PGVector store, on the same PostgreSQL.

SciFact is ingested once into an embedded ragloom index (bge-small, reused when present). Then,
in one run, on one PostgreSQL (pgserver, or ``--url``):

- **ragloom** writes every chunk with its vector into the database with ``migrate`` (chunks,
  metadata, vectors, BM25 postings, sources registry, audit: what any ingest writes, without
  embedding again);
- **LangChain** (``langchain-postgres`` PGVector, in its own virtual environment because it
  pins ``pgvector<0.4``) gets the same chunk texts, ids, metadata and vectors through
  ``add_embeddings``, the call for precomputed vectors, in batches as its docs show.

Both write times exclude embedding (the vectors are the same numbers). Then the 300 test queries
are run on both: ragloom with its default search (hybrid) and dense, LangChain with its search
(``similarity_search_with_score_by_vector``, the same query vectors, cosine distance); a
document's score is its best chunk's; nDCG@10.

    python -m venv benchmarks/results/pg-peer-venv
    benchmarks/results/pg-peer-venv/bin/pip install -r benchmarks/peers/requirements-pg-peer.txt
    python -m benchmarks postgres_peer [--peer-python benchmarks/results/pg-peer-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragloom import Config, Index
from ragloom.eval.beir import load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import search_documents, top_documents
from ragloom.stores.migrate import migrate

from .. import harness

SCIFACT = harness.SCIFACT
#: Run by the peer's own Python (it needs langchain-postgres), so a plain script, not a benchmark.
PEER = Path(__file__).resolve().parent / "_langchain_pgvector.py"


def database(args: argparse.Namespace) -> str:
    """A libpq URL of the database (without ``index=``)."""
    if args.url:
        return args.url
    from ragloom.testing.postgres import PostgresServer

    return PostgresServer(Path(args.pg_dir), keep=True).start().url()


def export(embedded: Index, queries: dict[str, str], path: Path) -> None:
    """Every chunk (id, text, document, vector) and every query vector, for the peer."""
    ids, texts, docs, vectors = [], [], [], []
    for record in embedded.store.list_sources():
        chunks, matrix = embedded.store.export_source(record.path)
        ids += [c.id for c in chunks]
        texts += [c.text for c in chunks]
        docs += [c.doc_id for c in chunks]
        vectors.append(matrix)
    qids = list(queries)
    np.savez(path, ids=np.array(ids), texts=np.array(texts, dtype=object), docs=np.array(docs),
             vectors=np.vstack(vectors).astype(np.float32), qids=np.array(qids),
             qvectors=embedded.embedder.embed_queries([queries[q] for q in qids]).astype(np.float32))


def ragloom_side(embedded: Index, url: str, test, config: Config) -> dict:
    target = f"{url}{'&' if '?' in url else '?'}index=peer_ragloom"
    with Index.open(target, config) as postgres:
        for record in postgres.store.list_sources():  # a run before: start empty
            postgres.store.delete_source(record.path)
        started = time.perf_counter()
        copied = migrate(embedded.store, postgres.store)
        seconds = time.perf_counter() - started
        found = {"chunks": copied.chunks, "seconds": seconds}
        for mode in ("hybrid", "dense"):
            run = {qid: search_documents(postgres, text, 100, mode, depth=config.search.k_max)
                   for qid, text in test.queries.items()}
            found[mode] = mean(per_query_metrics(test.qrels, run)["nDCG@10"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(SCIFACT))
    parser.add_argument("--index", default="/tmp/ragloom-bench-scifact")
    parser.add_argument("--pg-dir", default="/tmp/ragloom-bench-pg")
    parser.add_argument("--url", default=None, help="a PostgreSQL with pgvector to use instead of pgserver")
    parser.add_argument("--peer-python", default=str(harness.RESULTS / "pg-peer-venv" / "bin" / "python"))
    parser.add_argument("--work", default="/tmp/ragloom-pg-peer")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, python {sys.version.split()[0]}")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    test = load_beir(args.data, "test")
    config = Config.from_dict({"search": {"k_max": 300}})
    url = database(args)
    with Index.open(args.index, config) as embedded:
        embedded.ingest([Path(args.data) / "corpus.jsonl"])
        export(embedded, test.queries, work / "data.npz")
        ours = ragloom_side(embedded, url, test, config)
    out = work / "peer.json"
    subprocess.run([args.peer_python, str(PEER), "--url", url, "--data", str(work / "data.npz"), "--out", str(out)],
                   check=True)
    peer = json.loads(out.read_text())
    run = {qid: top_documents(lambda n, hits=hits: [tuple(h) for h in hits][:n], 100, 100)
           for qid, hits in peer["run"].items()}
    peer_ndcg = mean(per_query_metrics(test.qrels, run)["nDCG@10"])
    print(f"\n| SciFact, {ours['chunks']:,} chunks, one PostgreSQL | write s (vectors given) | chunks/s | nDCG@10 |")
    print("|---|---|---|---|")
    print(f"| ragloom postgres store, default search (hybrid) | {ours['seconds']:.1f} | "
          f"{ours['chunks'] / ours['seconds']:,.0f} | {ours['hybrid']:.4f} |")
    print(f"| ragloom postgres store, dense | | | {ours['dense']:.4f} |")
    print(f"| LangChain PGVector (langchain-postgres {peer['version']}) | {peer['seconds']:.1f} | "
          f"{peer['chunks'] / peer['seconds']:,.0f} | {peer_ndcg:.4f} |")
    print(f"\nragloom writes {peer['seconds'] / ours['seconds']:.2f}x as fast; nDCG@10 "
          f"{ours['hybrid'] - peer_ndcg:+.4f} (default search against LangChain's)")


if __name__ == "__main__":
    main()
