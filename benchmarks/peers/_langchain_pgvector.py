"""LangChain's PGVector store, for ``postgres_peer.py``: run by the peer's own Python (it needs
``langchain-postgres``; ragloom is not imported here).

Reads the chunks, their vectors and the query vectors that ``postgres_peer.py`` exported, writes
them with ``PGVector.add_embeddings`` (the call for precomputed vectors) in batches of 1,000,
times that, then runs every query with ``similarity_search_with_score_by_vector`` (top 100
chunks, cosine distance) and writes the seconds and, per query, (document, score) pairs.
"""

from __future__ import annotations

import argparse
import json
import time
from importlib.metadata import version

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_postgres import PGVector

BATCH = 1_000


class GivenVectors(Embeddings):
    """The store needs an embeddings object; every vector here is given, so none is computed."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the benchmark gives every vector")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("the benchmark gives every vector")


def sqlalchemy_url(libpq: str) -> str:
    return libpq.replace("postgresql://", "postgresql+psycopg://", 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    data = np.load(args.data, allow_pickle=True)
    ids, texts, docs, vectors = list(data["ids"]), list(data["texts"]), list(data["docs"]), data["vectors"]
    store = PGVector(GivenVectors(), connection=sqlalchemy_url(args.url), collection_name="scifact_peer",
                     embedding_length=vectors.shape[1], pre_delete_collection=True, use_jsonb=True)
    started = time.perf_counter()
    for start in range(0, len(ids), BATCH):
        part = slice(start, start + BATCH)
        store.add_embeddings(texts[part], vectors[part].tolist(),
                             metadatas=[{"doc_id": str(d)} for d in docs[part]], ids=[str(i) for i in ids[part]])
    seconds = time.perf_counter() - started
    run = {}
    for qid, vector in zip(data["qids"], data["qvectors"]):
        hits = store.similarity_search_with_score_by_vector(vector.tolist(), k=100)
        run[str(qid)] = [(doc.metadata["doc_id"], -float(distance)) for doc, distance in hits]
    with open(args.out, "w") as out:
        json.dump({"version": version("langchain-postgres"), "chunks": len(ids), "seconds": seconds, "run": run}, out)


if __name__ == "__main__":
    main()
