"""``ragloom search --explain``: the plan and each pipeline step as tables."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..retrieve.base import SearchResult
from .shared import console


def print_explanation(result: SearchResult, shown: int = 10) -> None:
    """The plan, one row per step (time, hits in/out), then the top hits' score after every step."""
    plan = result.plan
    console.print(Text.assemble(("preset ", "bold"), plan.preset, ("   k ", "bold"), str(plan.k),
                                ("   query seen by retrievers ", "bold"), repr(plan.text)), highlight=False)
    for note in plan.notes:
        console.print(f"  understood: {note}", highlight=False)
    if result.cache is not None:
        c = result.cache
        console.print(Text.assemble(("query cache ", "bold"), f"{'hit' if c['hit'] else 'miss'}   {c['hits']} hits, "
                                    f"{c['misses']} misses, {c['size']}/{c['capacity']} kept (this process)"),
                      highlight=False)
    steps = Table(title="pipeline", title_justify="left")
    for column, justify in (("step", "left"), ("ms", "right"), ("in", "right"), ("out", "right"), ("note", "left")):
        steps.add_column(column, justify=justify)
    for step in result.trace:
        steps.add_row(Text(step.name), f"{step.ms:.1f}", str(step.n_in), str(step.n_out), Text(step.note))
    steps.add_row("total", f"{result.elapsed_ms:.1f}", "", str(len(result.hits)), "")
    console.print(steps)
    if not result.hits or not result.trace:
        return
    scores = Table(title="score after each step (top hits)", title_justify="left")
    scores.add_column("#", justify="right")
    scores.add_column("chunk")
    for step in result.trace:
        scores.add_column(Text(step.name), justify="right")
    for hit in result.hits[:shown]:
        row = [str(hit.rank), hit.chunk_id[:10]]
        for step in result.trace:
            value = step.scores.get(hit.chunk_id)
            row.append("-" if value is None else f"{value:.4f}")
        scores.add_row(*row)
    console.print(scores)
