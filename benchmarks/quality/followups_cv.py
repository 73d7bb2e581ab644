"""Follow-ups per source, with confidence intervals and leave-one-source-out cross-validation (issue 40, item 5).

    python -m benchmarks followups_cv --data ../shared/datasets/convqa-dev --cache /tmp/fcv
    python -m benchmarks followups_cv ... --gemma-index /tmp/fcv/gemma-index   # EmbeddingGemma rows too
    python -m benchmarks followups_cv ... --llm        # the offline rewrite with the packaged LLM's words

The metric is ``chat_followups``'s (the issue's): each convqa-dev follow-up with gold passages
scores 1 when the extractive answer cites one; each follow-up MTRAG marks unanswerable scores 1
when the answer cites nothing. It is computed in this process on the code path the chat endpoint
and ``Index.ask`` share (``generate/answering.py``: ``standalone``, ``prepare``, ``in_context``;
``strategies/extractive.py``: ``candidates``, ``score_candidates``, ``select``), once per *retrieval
variant*, with every sentence's cross-encoder probabilities kept, so that each extractive setting
(the in-context floor ``answer.extractive_followup_min_relevance``, or none) is scored without
running the model again. A variant's turn with history is compared with the question alone (no
history: what the endpoint does with one message).

Retrieval variants (k and budget as ``answer``'s defaults):

- ``alone``: the question only; ``rewrite`` (today): the offline rewrite (``MAX_TERMS``), and
  ``rewrite-N`` with N terms;
- ``rrf``: reciprocal rank fusion of the question's and the rewrite's rankings (a needless rewrite
  cannot drown the question);
- ``split``: hybrid search whose dense side embeds the question read after the previous user
  question and whose BM25 side takes the offline rewrite (convex fusion, ``search.alpha``);
- ``rewrite-always``, ``rrf-always``: the terms carried into every follow-up, also one that does not
  refer back (the in-context floor still only where today's rewrite fires);
- ``llm+rewrite``: the offline rewrite with the words Qwen2.5-Coder-0.5B's standalone question adds
  (``--llm``; the LLM is asked only where the offline rewrite fires);
- ``gemma-*``: the same over an index embedded with EmbeddingGemma-300m (``--gemma-index``).

Reported: per source (the four MTRAG-UN domains), gold cited with history and alone, the gain with
a paired bootstrap 95% interval (turns resampled; each conversation has one evaluated turn), and
the unanswerable refused. Then leave-one-source-out cross-validation: for each knob set (the
in-context floor; the retrieval variant; both), the setting with the best pooled score on three
sources (answerable: gold cited, unanswerable: refused, one turn one vote; ties keep today's) is
scored on the fourth. Everything is tuned on convqa-dev only; the held-out half is judged elsewhere.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import harness
from .conversations import followups

SHARED = harness.DATASETS
#: In-context floors swept (None: no in-context rule, the question alone decides).
FLOORS: tuple[float | None, ...] = (None, 0.9, 0.7, 0.5, 0.3, 0.2, 0.1, 0.03)
TODAY = ("rewrite", 0.3)
RESAMPLES = 2000
RRF_DEPTH = 20


@dataclass(frozen=True)
class Scored:
    """One turn answered one way: each candidate sentence's passage document and scores."""

    docs: list[str]  # document of each context passage, by number - 1
    sentences: list[tuple[int, float, float, float]]  # (passage number, logit, probability, in-context probability)
    rewritten: bool
    in_context: bool


class CachedScorer:
    """The cross-encoder with its logits kept per (query, text): variants share most sentences."""

    def __init__(self, model) -> None:  # noqa: ANN001 - a CrossEncoder
        self.model, self.seen = model, {}

    def logits(self, query: str, texts: Sequence[str]):  # noqa: ANN201 - an array
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if (query, t) not in self.seen]
        if todo:
            for text, value in zip(todo, self.model.logits(query, todo)):
                self.seen[(query, text)] = float(value)
        return np.asarray([self.seen[(query, t)] for t in texts])


def split_hybrid(index, dense_text: str, lexical_text: str, k: int) -> list:  # noqa: ANN001
    """Hybrid search with a different query on each side, fused as ``hybrid`` fuses (convex, ``search.alpha``)."""
    from ragloom.retrieve.fusion import convex_combination

    depth = index.config.search.candidates
    dense = {h.chunk_id: h for h in index.search(dense_text, k=depth, mode="dense")}
    lexical = {h.chunk_id: h for h in index.search(lexical_text, k=depth, mode="lexical")}
    fused = convex_combination({c: h.scores.get("dense", h.score) for c, h in dense.items()},
                               {c: h.scores.get("lexical", h.score) for c, h in lexical.items()},
                               index.config.search.alpha)
    return [replace({**lexical, **dense}[c.chunk_id], rank=r, score=c.score) for r, c in enumerate(fused[:k], 1)]


def rrf_hits(index, queries: Sequence[str], k: int) -> list:  # noqa: ANN001
    from ragloom.retrieve.fusion import reciprocal_rank_fusion
    from ragloom.stores.base import Candidate

    rankings = [index.search(q, k=RRF_DEPTH) for q in dict.fromkeys(queries)]
    by_id = {h.chunk_id: h for hits in rankings for h in hits}
    fused = reciprocal_rank_fusion([[Candidate(h.chunk_id, h.score) for h in hits] for hits in rankings])
    return [replace(by_id[c.chunk_id], rank=r, score=c.score) for r, c in enumerate(fused[:k], 1)]


def always_rewrite(question: str, turns: Sequence, rewrite):  # noqa: ANN001, ANN201 - Turns, Rewrite
    """The salient terms carried into every follow-up, also one that does not refer back ("-always" variants)."""
    from ragloom.generate.followup import MAX_TERMS, Rewrite, conversation_lexicon, salient_terms

    if rewrite.rewritten or not turns:
        return rewrite
    terms = salient_terms(question, turns, MAX_TERMS, conversation_lexicon(question, turns))
    return Rewrite(f"{question.strip()} {' '.join(terms)}", question, "always", "carried always", tuple(terms))


LLM = "qwen2.5-coder-0.5b"
_llm: list = []


def with_llm_terms(question: str, turns: Sequence, rewrite):  # noqa: ANN001, ANN201 - Turns, Rewrite
    """The offline rewrite with the words the packaged LLM's standalone question adds (where the offline one fired)."""
    from ragloom.config import LLMConfig
    from ragloom.generate import create_llm
    from ragloom.generate.followup import Rewrite, llm_rewrite, words
    from ragloom.generate.prompts import TEMPLATES

    if not rewrite.rewritten:
        return rewrite
    if not _llm:
        _llm.append(create_llm(LLMConfig(model=LLM, max_tokens=64)))
    by_llm = llm_rewrite(question, turns, _llm[0].complete, TEMPLATES["followup"])
    have = set(words(rewrite.query))
    extra = [w for w in dict.fromkeys(words(by_llm.query)) if w not in have]
    return Rewrite(" ".join([rewrite.query, *extra]), question, "offline", "offline + LLM terms",
                   (*rewrite.added, *extra))


def answer_once(index, scorer: CachedScorer, row: dict, variant: str) -> Scored:  # noqa: ANN001
    """The turn answered with history (``alone``: without), on the answering code path, retrieval as ``variant``."""
    from ragloom.generate import answering
    from ragloom.generate.followup import offline_rewrite
    from ragloom.generate.strategies.extractive import candidates, score_candidates

    settings = index.config.answer
    base = index.answer_services()
    count = base.embedder().count_tokens
    question, history = row["question"], None if variant.endswith("alone") else row["history"]
    rewrite, _, turns = answering.standalone(base, question, history, None, count)
    name = variant.removeprefix("gemma-")
    context_rewrite = rewrite  # the in-context floor applies where today's rewrite fired
    if name.endswith("-always"):
        name = name.removesuffix("-always")
        rewrite = always_rewrite(question, turns, rewrite)
    elif name.startswith("rewrite-"):
        rewrite = offline_rewrite(question, turns, max_terms=int(name.split("-")[1]))
    elif name == "llm+rewrite":
        rewrite, name = with_llm_terms(question, turns, rewrite), "rewrite"
    previous = [t.content for t in turns if t.role == "user"][-1:]
    searches: dict[str, Callable[[str], list]] = {
        "rrf": lambda q: rrf_hits(index, [question, rewrite.query], settings.k),
        "split": lambda q: split_hybrid(index, " ".join([*previous, question]) if rewrite.rewritten else question,
                                        rewrite.query, settings.k),
    }

    def retrieve(query: str, k: int | None = None, **options):  # noqa: ANN003, ANN202
        result = index.retrieve(query, k=k, **options)
        return replace(result, hits=searches[name](query)) if name in searches else result

    services = answering.AnswerServices(index.config, retrieve, base.embedder, lambda: scorer, base.shown)
    # ``question``: searched as asked, the in-context floor still read after the previous question.
    search = question if name == "question" else rewrite.query
    request = answering.prepare(services, question, None, search_query=search, k=None, budget=None,
                                where=None, mode=None, count=count)
    request.in_context = answering.in_context(question, turns, context_rewrite)
    scored = score_candidates(request, candidates(request))
    return Scored([p.hit.doc_id for p in request.context.passages],
                  [(c.number, c.logit, c.score, c.in_context) for c in scored], rewrite.rewritten,
                  request.in_context is not None)


def cited(turn: Scored, floor: float, followup_floor: float | None, limit: int) -> set[str]:
    """The documents the extractive answer cites, as ``Extractive.stream`` chooses its sentences."""
    from ragloom.generate.strategies.extractive import Candidate, select

    found = [Candidate(n, i, "", "", logit, p, q) for i, (n, logit, p, q) in enumerate(turn.sentences)]
    chosen = select(found, limit, floor, followup_floor if turn.in_context else None)
    return {turn.docs[c.number - 1] for c in chosen}


def outcome(row: dict, turn: Scored, floor: float, followup_floor: float | None, limit: int) -> float:
    docs = cited(turn, floor, followup_floor, limit)
    return float(bool(docs & set(row["gold"]))) if row["gold"] else float(not docs)


def bootstrap(diffs: Sequence[float], resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% interval of the mean of ``diffs`` (paired differences, resampled with replacement)."""
    if not diffs:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def collect(data: Path, cache: Path, gemma: Path | None, variants: list[str], limit: int) -> tuple[list[dict], dict]:
    """Every turn answered every way (cached in ``cache/answers.json``)."""
    from ragloom import Config, Index
    from ragloom.models.cross_encoder import shared_cross_encoder

    rows = followups(data)[: limit or None] + followups(data, unanswerable=True)[: limit or None]
    domains = {c["_id"]: c.get("domain") or c["source"] for c in map(json.loads, (data / "conversations.jsonl")
                                                                        .read_text().splitlines())}
    for row in rows:
        row["source"] = domains[row["id"]]
    store = cache / "answers.json"
    done: dict = json.loads(store.read_text()) if store.exists() else {}
    homes = {"": cache / "index", "gemma-": gemma}
    for prefix, home in homes.items():
        wanted = [v for v in variants if v.startswith("gemma-") == bool(prefix)]
        if not wanted or home is None:
            continue
        embedder = {"embedder": {"provider": "embeddinggemma"}} if prefix else {}
        config = Config.from_dict({"index": str(home), **embedder})
        with Index.open(home, config) as index:
            if not index.stats().chunks:
                index.ingest([data / "corpus.jsonl"])
            scorer = CachedScorer(shared_cross_encoder(index.parts))
            for variant in wanted:
                for row in rows:
                    key = f"{variant}|{row['id']}"
                    if key not in done:
                        done[key] = answer_once(index, scorer, row, variant).__dict__
                store.write_text(json.dumps(done))
                print(f"answered {len(rows)} turns: {variant}", file=sys.stderr, flush=True)
    return rows, {k: Scored(**v) for k, v in done.items()}


Config_ = tuple[str, float | None]  # (retrieval variant, in-context floor)


class Scores:
    """Each turn's score under a setting, and the question alone's."""

    def __init__(self, rows: list[dict], turns: dict[str, Scored], floor: float, limit: int, prefix: str = "") -> None:
        self.rows, self.turns, self.floor, self.limit, self.memo = rows, turns, floor, limit, {}
        self.alone = [outcome(r, turns[f"{prefix}alone|{r['id']}"], floor, None, limit) for r in rows]

    def of(self, config: Config_) -> list[float]:
        if config not in self.memo:
            variant, followup_floor = config
            self.memo[config] = [outcome(r, self.turns[f"{variant}|{r['id']}"], self.floor, followup_floor, self.limit)
                                 for r in self.rows]
        return self.memo[config]


def summary(scores: Scores, with_history: list[float], keep: Callable[[dict], bool]) -> dict:
    """Gold cited (with history, alone, gain and its interval) and unanswerable refused, on the rows ``keep`` takes."""
    answerable = [i for i, r in enumerate(scores.rows) if keep(r) and r["gold"]]
    unanswerable = [i for i, r in enumerate(scores.rows) if keep(r) and not r["gold"]]
    diffs = [with_history[i] - scores.alone[i] for i in answerable]
    return {"n": len(answerable), "won": sum(d > 0 for d in diffs), "lost": sum(d < 0 for d in diffs),
            "with": mean([with_history[i] for i in answerable]),
            "alone": mean([scores.alone[i] for i in answerable]), "gain": mean(diffs), "ci": bootstrap(diffs),
            "n_unanswerable": len(unanswerable), "refused": mean([with_history[i] for i in unanswerable]),
            "refused_alone": mean([scores.alone[i] for i in unanswerable])}


def against(scores: Scores, with_history: list[float], reference: list[float]) -> dict:
    """Gold cited minus the reference setting's (answerable turns), with its paired interval."""
    answerable = [i for i, r in enumerate(scores.rows) if r["gold"]]
    diffs = [with_history[i] - reference[i] for i in answerable]
    return {"gain": mean(diffs), "ci": bootstrap(diffs)}


def choose(scores: Scores, knobs: Sequence[Config_], train: Callable[[dict], bool]) -> Config_:
    """The setting with the best pooled score on the ``train`` rows (first of equals: today's is listed first)."""
    rows = [i for i, r in enumerate(scores.rows) if train(r)]
    return max(knobs, key=lambda c: sum(scores.of(c)[i] for i in rows))


def cross_validate(scores: Scores, knobs: Sequence[Config_],
                   sources: list[str]) -> tuple[list[float], dict[str, Config_]]:
    """Leave one source out: each source's turns scored with the setting chosen on the others."""
    predicted = list(scores.alone)
    chosen = {}
    for held in sources:
        chosen[held] = choose(scores, knobs, lambda r, held=held: r["source"] != held)
        for i, r in enumerate(scores.rows):
            if r["source"] == held:
                predicted[i] = scores.of(chosen[held])[i]
    return predicted, chosen


def cell(s: dict) -> str:
    return f"{s['gain']:+.3f} [{s['ci'][0]:+.3f}, {s['ci'][1]:+.3f}]"


def name(config: Config_) -> str:
    return f"{config[0]}, {'no in-context floor' if config[1] is None else f'in-context floor {config[1]}'}"


def retrieval_table(scores: Scores, variants: Sequence[str], sources: list[str]) -> dict:
    """Where each variant puts a gold passage: in the context, and first (answerable turns)."""
    print("Retrieval: share of answerable follow-ups with a gold passage in the answer's context / first")
    print()
    print(f"| retrieval | all | {' | '.join(sources)} |")
    print(f"|---|---|{'---|' * len(sources)}")
    out = {}
    for variant in variants:
        line = {}
        for group in ("all", *sources):
            rows = [r for r in scores.rows if r["gold"] and group in ("all", r["source"])]
            docs = [scores.turns[f"{variant}|{r['id']}"].docs for r in rows]
            line[group] = (mean([float(bool(set(d) & set(r["gold"]))) for d, r in zip(docs, rows)]),
                           mean([float(bool(d) and d[0] in r["gold"]) for d, r in zip(docs, rows)]))
        out[variant] = line
        print(f"| {variant} | {' | '.join(f'{a:.3f} / {b:.3f}' for a, b in line.values())} |")
    print()
    return out


def report(scores: Scores, configs: Sequence[Config_], knob_sets: dict[str, list[Config_]],
           variants: Sequence[str], today: Config_ = TODAY) -> dict:
    """The tables; ``against``: each setting's gold cited minus today's default (bge-small, offline rewrite, 0.3)."""
    sources = sorted({r["source"] for r in scores.rows})
    every = lambda r: True  # noqa: E731
    results: dict = {"configs": {}, "cv": {}, "retrieval": retrieval_table(scores, variants, sources)}
    refused_alone = mean([scores.alone[i] for i, r in enumerate(scores.rows) if not r["gold"]])
    print("Gold cited with history minus the question alone, with its paired bootstrap 95% interval, "
          f"per source; unanswerable refused with history (alone: {refused_alone:.3f})")
    print()
    print(f"| setting | all: with / alone | all: gain [95% CI] | turns won / lost | {' | '.join(sources)} | refused "
          f"| against today's default |")
    print(f"|---|---|---|---|{'---|' * len(sources)}---|---|")
    for config in configs:
        history = scores.of(config)
        overall = summary(scores, history, every)
        per = {s: summary(scores, history, lambda r, s=s: r["source"] == s) for s in sources}
        versus = against(scores, history, scores.of(TODAY))
        results["configs"][name(config)] = {"all": overall, **per, "against_today": versus}
        print(f"| {name(config)} | {overall['with']:.3f} / {overall['alone']:.3f} | {cell(overall)} | "
              f"{overall['won']} / {overall['lost']} | {' | '.join(cell(per[s]) for s in sources)} | "
              f"{overall['refused']:.3f} | {cell(versus)} |")
    print()
    print("Leave-one-source-out: each source scored with the setting chosen on the other three "
          "(pooled score: gold cited on answerable turns, refused on unanswerable ones)")
    print()
    print(f"| knobs chosen | all: with / alone | all: gain [95% CI] | {' | '.join(sources)} | refused "
          f"| against today's default | chosen per held-out source |")
    print(f"|---|---|---|{'---|' * len(sources)}---|---|---|")
    for label, knobs in knob_sets.items():
        predicted, chosen = cross_validate(scores, knobs, sources)
        overall = summary(scores, predicted, every)
        per = {s: summary(scores, predicted, lambda r, s=s: r["source"] == s) for s in sources}
        results["cv"][label] = {"all": overall, **per, "chosen": {s: name(c) for s, c in chosen.items()}}
        picks = "; ".join(f"{s}: {name(c)}" for s, c in chosen.items())
        versus = against(scores, predicted, scores.of(TODAY))
        results["cv"][label]["against_today"] = versus
        print(f"| {label} | {overall['with']:.3f} / {overall['alone']:.3f} | {cell(overall)} | "
              f"{' | '.join(cell(per[s]) for s in sources)} | {overall['refused']:.3f} | {cell(versus)} | {picks} |")
    return results


DEFAULT_VARIANTS = "alone,rewrite,question,rrf,split,rewrite-3,rewrite-4,rewrite-8,rewrite-always,rrf-always"
GEMMA_VARIANTS = "gemma-alone,gemma-rewrite,gemma-rrf,gemma-split"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=SHARED / "convqa-dev")
    parser.add_argument("--cache", type=Path, required=True, help="folder for the index and the answers (reused)")
    parser.add_argument("--gemma-index", type=Path, default=None,
                        help="an index of the corpus embedded with EmbeddingGemma (made there when empty)")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--llm", action="store_true", help=f"also the offline rewrite with {LLM}'s added words")
    parser.add_argument("--limit", type=int, default=0, help="turns of each kind (0: all)")
    args = parser.parse_args()
    variants = (args.variants.split(",") + (["llm+rewrite"] if args.llm else [])
                + (GEMMA_VARIANTS.split(",") if args.gemma_index else []))
    args.cache.mkdir(parents=True, exist_ok=True)
    rows, turns = collect(args.data, args.cache, args.gemma_index, variants, args.limit)
    from ragloom import Config

    settings = Config.from_dict({}).answer
    results = {}
    for prefix in ("", "gemma-"):
        family = [v for v in variants if v.startswith("gemma-") == bool(prefix)]
        if not family:
            continue
        if prefix:
            print(f"\nOver the EmbeddingGemma index (its own question alone is the baseline):\n")
        scores = Scores(rows, turns, settings.extractive_min_relevance, settings.extractive_sentences, prefix)
        today = (prefix + TODAY[0], TODAY[1])
        retrievals = [v for v in family if v != prefix + "alone"]
        configs = [(v, f) for v in retrievals for f in (None, today[1])] + [(today[0], f) for f in FLOORS
                                                                            if f not in (None, today[1])]
        knob_sets = {
            "nothing (rewrite, floor 0.3)": [today],
            "in-context floor": [today] + [(today[0], f) for f in FLOORS if f != today[1]],
            "retrieval variant (floor 0.3)": [today] + [(v, today[1]) for v in retrievals if v != today[0]],
            "retrieval variant and floor": [today] + [(v, f) for v in retrievals for f in FLOORS if (v, f) != today],
        }
        results[prefix or "default"] = report(scores, configs, knob_sets, family, today)
    harness.record(results)

if __name__ == "__main__":
    main()
