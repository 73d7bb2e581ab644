"""``ragloom search``."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..filters import parse_cli_filters
from ..types import Hit
from .shared import console, display_path, names_of, state


def search_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for, in plain words."),
    k: Optional[int] = typer.Option(None, "-k", "--top-k", help="How many passages to return."),
    where: Optional[list[str]] = typer.Option(
        None, "--where", "-w", help=("Metadata filter: key=value, key!=v, key<v, key<=v, key>v, key>=v, key*=text (contains), "
              "key~a,b (one of); source=cors.md, source=tutorial/cors.md or source='**/cors.md' (repeatable).")
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", "--preset", "-m", "-p",
        help=f"Search preset: {names_of('preset')}, or one of yours under search.presets (default: search.mode).",
    ),
    min_score: Optional[float] = typer.Option(None, "--min-score", help="Drop passages scoring below this."),
    as_json: bool = typer.Option(False, "--json", help="Print the hits as JSON."),
    full: bool = typer.Option(False, "--full", help="Show whole passages instead of snippets."),
    explain: bool = typer.Option(
        False, "--explain", help="Also show how the query was understood and each pipeline step's time and scores."
    ),
) -> None:
    """Find the passages that best match a query."""
    filters = parse_cli_filters(where or [])
    with state(ctx).open_index() as index:
        result = index.retrieve(query, k=k, where=filters, mode=mode, min_score=min_score)
    hits = result.hits
    if as_json:
        payload = result.to_dict() if explain else [hit.to_dict() for hit in hits]
        console.print_json(json.dumps(payload, default=str))
        return
    if explain:
        from .explain import print_explanation

        print_explanation(result)
    if not hits:
        console.print("no passages matched")
        return
    console.print(hits_table(hits, full=full))
    if any(hit.weak for hit in hits):
        everything = "every hit is" if all(hit.weak for hit in hits) else "the hits marked weak are"
        console.print(Text(f"{everything} a weak match (relevance below search.weak_cosine for cos, "
                           "answer.unanswerable_below for p): probably not about the query", style="yellow"))


def hits_table(hits: list[Hit], full: bool = False, width: int | None = None) -> Table:
    """Rank, score, where the passage is from, and the passage, readable from 80 columns up.

    The source column holds the path with the section, page and chunk under it, and gets a
    third of the width (at most 48 columns); the passage gets the rest and folds long words
    instead of cropping them.
    """
    width = width or console.width
    source_width = max(16, min(48, (width - 16) // 3))
    table = Table(show_lines=True, box=box.SIMPLE_HEAD, expand=True, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("source", width=source_width, overflow="fold")
    table.add_column("passage", ratio=1, overflow="fold")
    for hit in hits:
        where = [hit.section] if hit.section else []
        where.append(" · ".join([*([f"p. {hit.page}"] if hit.page is not None else []), f"chunk {hit.chunk_index}"]))
        source = Text(display_path(hit.source))
        source.append("\n" + "\n".join(where), style="dim")
        table.add_row(str(hit.rank), score_cell(hit), source, Text(hit.text if full else snippet(hit.text)))
    return table


#: How the terminal names a hit's relevance (``Hit.relevance_kind``).
_RELEVANCE_LABEL = {"rerank_probability": "p", "dense": "cos"}


def score_cell(hit: Hit) -> Text:
    """The fused rank score (it orders the hits), then the relevance that means the same across
    queries, named (``cos 0.47``: dense cosine; ``p 0.91``: the cross-encoder's probability),
    and ``weak`` when it is below the search's threshold, as ``ask`` judges passages."""
    cell = Text(f"{hit.score:.3f}")
    if hit.relevance is not None:
        cell.append(f"\n{_RELEVANCE_LABEL[hit.relevance_kind or '']} {hit.relevance:.2f}", style="dim")
    if hit.weak:
        cell.append("\nweak", style="yellow")
    return cell


def snippet(text: str, limit: int = 280) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0] + " …"


def register(app: typer.Typer) -> None:
    app.command("search")(search_command)
