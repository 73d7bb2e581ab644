"""Evaluation output: a rich table, a JSON file, TREC run files and a self-contained HTML page.

The terminal table and the HTML table are drawn from the same rows, so they never disagree.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

from rich.table import Table

from .keywords import KeywordResult
from .metrics import MEASURES, PRIMARY
from .runner import EvalResult
from .svg import grouped_bars

#: p-values below this are flagged in the tables.
SIGNIFICANT = 0.05

_HEADERS = ["run", *MEASURES, "p", "p50 ms", "p95 ms"]
_INDEX_HEADERS = ["index of", "documents", "chunks", "build s", "tokens", "tok/s", "this run"]


def table_rows(result: EvalResult) -> list[list[str]]:
    """One row per run; a metric significantly different from the first run is starred."""
    rows = []
    for i, run in enumerate(result.runs):
        means = run.means()
        p_values = result.p_values.get(run.name, {})
        stars = ["*" if i and p_values.get(m, 1.0) < SIGNIFICANT else "" for m in MEASURES]
        rows.append([
            run.name, *(f"{means[m]:.3f}{star}" for m, star in zip(MEASURES, stars)),
            "—" if i == 0 else f"{p_values[PRIMARY]:.3g}", f"{run.latency_p50:.1f}", f"{run.latency_p95:.1f}",
        ])
    return rows


def index_rows(result: EvalResult) -> list[list[str]]:
    """One row per scratch index (runs that differ only in search settings share one)."""
    users: dict[str, list[str]] = {}
    for run in result.runs:
        users.setdefault(run.build.path, []).append(run.name)
    rows = []
    for run in result.runs:
        build = run.build
        if build.path not in users:
            continue
        this_run = "reused" if build.reused else f"ingested in {build.seconds:.1f} s"
        names = users.pop(build.path)
        label = ", ".join(names) if len(names) <= 3 else f"{names[0]} and {len(names) - 1} more runs"
        rows.append([
            label, str(build.documents), str(build.chunks), f"{build.build_seconds:.1f}",
            f"{build.build_tokens:,}", f"{build.tokens_per_second:,.0f}", this_run,
        ])
    return rows


def caption(result: EvalResult) -> str:
    refused = [f"{run.name}: {len(run.errors)} queries refused (scored as finding nothing; "
               f"e.g. {next(iter(run.errors))}: {next(iter(run.errors.values()))})" for run in result.runs if run.errors]
    return "\n".join([(
        f"{result.dataset} · {result.split} split · {result.queries} queries · top {result.k} documents · "
        f"p = paired t-test on {PRIMARY} vs {result.baseline.name}; * = p < {SIGNIFICANT} on that metric · "
        "latency per query, including the query embedding"
    ), *refused])


def rich_tables(result: EvalResult) -> tuple[Table, Table]:
    """The comparison, and how each scratch index was built (tok/s = embedding throughput)."""
    return (
        _rich(f"ragloom eval: {result.dataset} ({result.split})", _HEADERS, table_rows(result), caption(result)),
        _rich("scratch indexes", _INDEX_HEADERS, index_rows(result), None),
    )


def _rich(title: str, headers: list[str], rows: list[list[str]], note: str | None) -> Table:
    table = Table(title=title, caption=note, title_justify="left", caption_justify="left")
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def _html_table(element_id: str, headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table id="{element_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def to_dict(result: EvalResult) -> dict[str, Any]:
    return {
        "dataset": result.dataset, "split": result.split, "k": result.k, "queries": result.queries,
        "created_at": result.created_at, "machine": result.machine, "baseline": result.baseline.name,
        "runs": [
            {
                "name": run.name, "mode": run.mode, "config_file": run.config_file,
                "metrics": run.means(), "p_values": result.p_values.get(run.name, {}),
                "latency_ms": {"p50": run.latency_p50, "p95": run.latency_p95}, "errors": run.errors,
                "index": run.build.to_dict(), "per_query": run.per_query,
            }
            for run in result.runs
        ],
    }


def write_reports(result: EvalResult, folder: Path) -> dict[str, Path]:
    """Write the JSON, HTML and TREC run files; return what was written, by kind."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{result.dataset}-{result.split}"
    written = {"json": folder / f"{stem}.json", "html": folder / f"{stem}.html"}
    written["json"].write_text(json.dumps(to_dict(result), indent=2), encoding="utf-8")
    written["html"].write_text(html_report(result), encoding="utf-8")
    for run in result.runs:
        path = folder / "runs" / f"{stem}-{_slug(run.name)}.trec"
        write_trec(run.run, run.name, path)
        written[f"trec:{run.name}"] = path
    return written


def write_trec(run: dict[str, dict[str, float]], name: str, path: Path) -> None:
    """``qid Q0 docid rank score tag``, the format trec_eval and ir-measures read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = _slug(name)
    with open(path, "w", encoding="utf-8") as handle:
        for qid, docs in run.items():
            for rank, (doc_id, score) in enumerate(docs.items(), start=1):
                handle.write(f"{qid} Q0 {doc_id} {rank} {score:.6f} {tag}\n")


def html_report(result: EvalResult) -> str:
    names = [run.name for run in result.runs]
    metric_chart = grouped_bars(
        "Retrieval quality per run", list(MEASURES),
        [(run.name, [run.means()[m] for m in MEASURES]) for run in result.runs],
    )
    latency_chart = grouped_bars(
        "Search latency per query (ms)", names,
        [("p50", [r.latency_p50 for r in result.runs]), ("p95", [r.latency_p95 for r in result.runs])],
        unit=" ms", digits=3,
    )
    machine = ", ".join(f"{k}: {v}" for k, v in result.machine.items())
    return _PAGE.format(
        title=escape(f"ragloom eval — {result.dataset} ({result.split})"),
        caption=escape(caption(result)),
        results=_html_table("results", _HEADERS, table_rows(result)),
        indexes=_html_table("indexes", _INDEX_HEADERS, index_rows(result)),
        metric_chart=metric_chart, latency_chart=latency_chart,
        footer=escape(f"generated {result.created_at} · {machine}"),
    )


def keyword_table(results: list[KeywordResult]) -> Table:
    rows = [
        [r.name, str(r.cases), f"{r.top1_accuracy:.1%}", f"{r.topk_accuracy:.1%}", str(r.k),
         f"{r.latency_p50:.1f}"]
        for r in results
    ]
    note = "a query passes when a passage holds every keyword (any case) and the expected metadata"
    return _rich("ragloom eval: keyword test set", ["run", "queries", "top-1", "top-k", "k", "p50 ms"], rows, note)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #222; }}
table {{ border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; }}
th, td {{ padding: .35rem .6rem; border-bottom: 1px solid #ddd; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
th {{ background: #f4f6f8; }}
figure {{ margin: 1.5rem 0; }} .caption, footer {{ color: #666; font-size: .85rem; }}
</style></head>
<body>
<h1>{title}</h1>
{results}
<p class="caption">{caption}</p>
<figure>{metric_chart}</figure>
<figure>{latency_chart}</figure>
<h2>Scratch indexes</h2>
{indexes}
<p class="caption">build s = total ingest time of the index; tok/s = tokens embedded per second of embedding</p>
<footer>{footer}</footer>
</body></html>
"""
