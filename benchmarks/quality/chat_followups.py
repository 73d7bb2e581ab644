"""Follow-ups through the OpenAI-compatible endpoint: is a gold passage cited more with the history?

The convqa-dev follow-up turns that have gold passages (MTRAG-UN) are asked of a real ``ragloom
serve`` app (in this process, under uvicorn) through the official ``openai`` SDK, with the
extractive strategy (no LLM): once with the earlier turns as the conversation (user and assistant
messages), once as the last question alone. A turn scores 1 when one of the answer's citations is
a gold passage. The follow-ups MTRAG marks unanswerable are asked the same two ways, and a turn
scores 1 when the answer cites nothing ("The sources do not say."). Conversations are split in two
by a hash of their id (``conversations.py``'s halves): "tune" and "report"; both are printed per
domain, report is the figure to quote.

    python -m benchmarks chat_followups --data ../shared/datasets/convqa-dev
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from .. import harness
from .conversations import followups, half

SHARED = harness.DATASETS


def serve_index(index_dir: Path, corpus: Path):  # noqa: ANN201 - (url, server, thread, chunk -> doc id)
    import uvicorn

    from ragloom import Config, Index
    from ragloom.server.app import create_app

    config = Config.from_dict({"index": str(index_dir), "server": {"search_threads": 2}})
    with Index.open(index_dir, config) as index:
        index.ingest([corpus])
        doc_of = {chunk.id: chunk.doc_id for chunk in index.store.iter_chunks()}
    port = harness.free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.1)
    return f"http://127.0.0.1:{port}/v1", server, thread, doc_of


def messages(row: dict, with_history: bool) -> list[dict]:
    earlier = [{"role": t.role, "content": t.content} for t in row["history"]] if with_history else []
    return [*earlier, {"role": "user", "content": row["question"]}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SHARED / "convqa-dev")
    parser.add_argument("--limit", type=int, default=0, help="follow-up turns (0: all)")
    args = parser.parse_args()
    import openai

    rows = followups(args.data)[: args.limit or None]
    unanswerable = followups(args.data, unanswerable=True)[: args.limit or None]
    domains = {c["_id"]: c.get("domain") or c.get("source") for c in map(json.loads, (args.data / "conversations.jsonl")
                                                                          .read_text().splitlines())}
    work = Path(tempfile.mkdtemp(prefix="chat-followups-"))
    url, server, thread, doc_of = serve_index(work / "index", args.data / "corpus.jsonl")
    client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
    cited: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    refused: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    try:
        for n, row in enumerate(rows + unanswerable, 1):
            domain = domains.get(row["id"]) or "?"
            for way, with_history in (("history", True), ("alone", False)):
                reply = client.chat.completions.create(model="extractive", messages=messages(row, with_history))
                citations = reply.model_extra.get("citations", [])
                if row["gold"]:
                    score, into = float(bool({doc_of.get(c["chunk_id"]) for c in citations} & set(row["gold"]))), cited
                else:
                    score, into = float(not citations), refused
                for group in (half(row["id"]), "all"):
                    into[(group, domain, way)].append(score)
                    into[(group, "every source", way)].append(score)
            if n % 20 == 0:
                print(f"{n}/{len(rows) + len(unanswerable)}", file=sys.stderr, flush=True)
    finally:
        server.should_exit = True
        thread.join()
    table(cited, "gold cited")
    print()
    table(refused, "unanswerable refused")


def table(scores: dict[tuple[str, str, str], list[float]], what: str) -> None:
    print(f"| half | source | turns | {what}, with history | {what}, question alone | gain |")
    print("|---|---|---|---|---|---|")
    for group in ("tune", "report", "all"):
        for domain in sorted({d for g, d, _ in scores if g == group}):
            with_h, alone = scores[(group, domain, "history")], scores[(group, domain, "alone")]
            a, b = sum(with_h) / len(with_h), sum(alone) / len(alone)
            print(f"| {group} | {domain} | {len(with_h)} | {a:.3f} | {b:.3f} | {a - b:+.3f} |")


if __name__ == "__main__":
    main()
