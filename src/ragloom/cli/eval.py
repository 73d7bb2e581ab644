"""``ragloom eval``: retrieval quality and speed on a BEIR dataset, or on a keyword test set."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.text import Text

from ..config import Config
from ..errors import UnknownComponentError
from ..retrieve.pipeline import preset_names
from .shared import console, display_path, names_of, state
from .ingest import _RichProgress, progress_bars

if TYPE_CHECKING:
    from ..eval.runner import RunSpec

_BEIR_K = 100


def eval_command(
    ctx: typer.Context,
    dataset: Optional[Path] = typer.Argument(
        None, help="BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv). With --keywords: "
        "a folder of documents to index first (default: search the existing --index)."
    ),
    split: str = typer.Option("test", "--split", help="Which qrels/<split>.tsv to score."),
    configs: Optional[list[Path]] = typer.Option(
        None, "--config", "-c", help="A config file to evaluate (repeatable; the first is the baseline)."
    ),
    modes: Optional[list[str]] = typer.Option(
        None, "--mode", "--preset", "-m", "-p",
        help=f"Search preset: {names_of('preset')}, or one under search.presets (repeatable; each run is named "
        "after it; default: each config's own pipeline).",
    ),
    k: Optional[int] = typer.Option(
        None, "-k", "--top-k",
        help=f"Results per query (default: {_BEIR_K} documents for BEIR, search.k for keywords).",
    ),
    out: Path = typer.Option(Path("ragloom-eval"), "--out", "-o", help="Folder for the JSON, HTML and TREC run files."),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir",
        help="Where scratch indexes are kept (default: $RAGLOOM_CACHE_DIR or ~/.cache/ragloom/eval).",
    ),
    keywords: Optional[Path] = typer.Option(
        None, "--keywords", help="A YAML/JSONL keyword test set instead of BEIR qrels."
    ),
    fail_under: Optional[float] = typer.Option(
        None, "--fail-under",
        help="With --keywords: exit with status 1 when a run's top-1 accuracy is below this (e.g. 0.9).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    answers: bool = typer.Option(
        False, "--answers", help="Score answers instead of rankings: EM, token F1, containment (and citation "
        "precision/recall) against the dataset's answers.jsonl (_id, answers)."
    ),
    strategies: Optional[list[str]] = typer.Option(
        None, "--strategy", "-s", help="With --answers: strategies to compare (repeatable; first-sentence is the "
        "baseline). Default: first-sentence, extractive."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", help="With --answers: a fixed subset of this many questions."),
) -> None:
    """Measure retrieval quality and speed; several configs or modes are compared side by side.

    Example: ragloom eval ../datasets/scifact --split test --mode hybrid --mode dense
    """
    from ..eval.scratch import default_cache_dir

    specs = _specs(ctx, configs or [], modes or [])
    cache = cache_dir or default_cache_dir()
    if answers:
        if dataset is None:
            from ..eval.beir import DatasetError

            raise DatasetError("give the dataset folder: ragloom eval DATASET_DIR --answers")
        _answer_eval(specs[0], dataset, split, strategies or ["first-sentence", "extractive"], limit, k, out, cache,
                     quiet)
    elif keywords is not None:
        _keyword_eval(specs, keywords, dataset, k, out, cache, fail_under, quiet)
    elif dataset is None:
        from ..eval.beir import DatasetError

        raise DatasetError("give a BEIR dataset folder (ragloom eval DATASET_DIR), or a test set with --keywords FILE")
    else:
        _beir_eval(specs, dataset, split, k or _BEIR_K, out, cache, quiet)


def _specs(ctx: typer.Context, files: list[Path], modes: list[str]) -> list[RunSpec]:
    from ..eval.runner import RunSpec

    base = state(ctx)
    loaded: list[tuple[str | None, Config]] = (
        [(str(f), dataclasses.replace(base, config_file=str(f)).config()) for f in files]
        if files else [(base.config_file, base.config())]
    )
    specs = []
    for file, config in loaded:
        known = preset_names(config.search.presets)
        for mode in modes:
            if mode not in known:
                raise UnknownComponentError("search preset", mode, known)
        # No preset asked for: the config's own pipeline (search.pipeline, else its mode's preset).
        own = config.search.mode if config.search.pipeline is None else None
        for mode in modes or [own]:
            parts = [Path(file).stem] if len(loaded) > 1 else []
            parts += [mode or "custom"] if len(modes) > 1 or not parts else []
            specs.append(RunSpec("/".join(parts), config, mode, file))
    counts = Counter(s.name for s in specs)
    if any(n > 1 for n in counts.values()):  # same file stem twice: number them
        specs = [dataclasses.replace(s, name=f"{i + 1}:{s.name}") for i, s in enumerate(specs)]
    return specs


def _beir_eval(specs: list[RunSpec], dataset: Path, split: str, k: int, out: Path, cache: Path, quiet: bool) -> None:
    from ..eval.beir import load_beir
    from ..eval.report import rich_tables, write_reports
    from ..eval.runner import QueryProgress, evaluate_beir

    data = load_beir(dataset, split)

    class _Queries(QueryProgress):
        def start(self, total: int) -> None:
            self.task = bar.add_task(f"queries ({len(specs)} runs)", total=total)

        def done(self, run: str) -> None:
            bar.update(self.task, advance=1)

    with progress_bars(quiet) as bar:
        result = evaluate_beir(data, specs, cache, k=k, ingest_progress=_RichProgress(bar), query_progress=_Queries())
    for table in rich_tables(result):
        _print_wide(table)
    written = write_reports(result, out)
    console.print(f"report: {display_path(str(written['html']))}, {display_path(str(written['json']))}; "
                  f"TREC runs in {display_path(str(out / 'runs'))}")


def _keyword_eval(specs: list[RunSpec], file: Path, folder: Optional[Path], k: Optional[int], out: Path, cache: Path,
                  fail_under: Optional[float], quiet: bool) -> None:
    from ..eval.keywords import evaluate_keywords, load_keyword_cases
    from ..eval.report import keyword_table
    from ..eval.runner import search_view
    from ..eval.scratch import eval_config, index_key, open_scratch_index
    from ..index import Index

    cases = load_keyword_cases(file)
    results = []
    with ExitStack() as stack:
        indexes: dict[str, Index] = {}  # runs that differ only in search settings share one index
        for spec in specs:
            if folder is not None:
                key = index_key(folder, spec.config)
                if key not in indexes:
                    with progress_bars(quiet) as bar:
                        indexes[key], _ = open_scratch_index(folder, spec.config, cache, _RichProgress(bar))
                    stack.callback(indexes[key].close)
                index = search_view(indexes[key], eval_config(spec.config, indexes[key].path))
            else:
                key = str(Path(spec.config.index).expanduser().resolve())
                if key not in indexes:
                    indexes[key] = stack.enter_context(Index.open(spec.config.index, spec.config, create=False))
                index = search_view(indexes[key], spec.config)
            results.append(evaluate_keywords(index, cases, k=index.clamp_k(k), mode=spec.mode, name=spec.name))
    _print_wide(keyword_table(results))
    for result in results:
        for failure in result.failures:
            where = f"passes at rank {failure.first_passing_rank}" if failure.first_passing_rank else "fails in top-k"
            lacks = ", ".join(failure.top1_unmet) or "no results"
            console.print(Text.assemble(("✗", "red"), f" [{result.name}] {failure.query!r}: top-1 lacks {lacks}; {where}"),
                          highlight=False)
    out.mkdir(parents=True, exist_ok=True)
    report = out / f"keywords-{file.stem}.json"
    report.write_text(json.dumps([r.to_dict() for r in results], indent=2), encoding="utf-8")
    console.print(f"report: {display_path(str(report))}")
    if fail_under is not None and any(r.top1_accuracy < fail_under for r in results):
        raise typer.Exit(1)


def _answer_eval(spec: RunSpec, dataset: Path, split: str, runs: list[str], limit: Optional[int], k: Optional[int],
                 out: Path, cache: Path, quiet: bool) -> None:
    from ..eval.answers import dump, evaluate_answers, load_answers, spread, table
    from ..eval.beir import load_beir
    from ..eval.scratch import open_scratch_index

    data = load_beir(dataset, split)
    golds = load_answers(Path(dataset) / "answers.jsonl")
    questions = spread([q for q in data.queries if q in golds], limit)
    with progress_bars(quiet) as bar:
        index, _ = open_scratch_index(data.corpus_path, spec.config, cache, _RichProgress(bar), shard_corpus=True)
        task = bar.add_task(f"answers ({len(runs)} runs)", total=len(questions) * len(runs))
        with index:
            results, recall = evaluate_answers(index, data, golds, runs, questions=questions, k=k or 5,
                                               progress=lambda run, qid: bar.update(task, advance=1))
    console.print(table(results, recall, k or 5), highlight=False, markup=False)
    report = out / f"answers-{data.name}.json"
    dump(results, recall, report)
    console.print(f"report: {display_path(str(report))}")


def _print_wide(table) -> None:
    """Tables keep their columns when piped to a file (rich would squeeze them to 80)."""
    if not console.is_terminal:
        console.width = max(console.width, 120)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
