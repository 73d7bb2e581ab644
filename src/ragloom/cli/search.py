"""``ragloom search``."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..filters import parse_cli_filters
from ..ingest.files import distinguishable
from ..markup import inline_plain, plain_text
from ..types import Hit
from .render import print_hits, relevance_label, snippet
from .shared import console, names_of, state


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
    table: bool = typer.Option(False, "--table", help="Show the hits as a table (rank, score, source, passage)."),
    raw: bool = typer.Option(False, "--raw", help="Show passages as stored, with their Markdown and HTML."),
    full_paths: bool = typer.Option(False, "--full-paths", help="Show sources by their full path, not relative "
                                    "to the folder that was ingested."),
    explain: bool = typer.Option(
        False, "--explain", help="Also show how the query was understood and each pipeline step's time and scores."
    ),
) -> None:
    """Find the passages that best match a query.

    Example: ragloom search "how do I enable CORS?" -k 3 --where section~CORS
    """
    filters = parse_cli_filters(where or [])
    with state(ctx).open_index() as index:
        result = index.retrieve(query, k=k, where=filters, mode=mode, min_score=min_score)
        relative = index.display_paths()
    shown = distinguishable if full_paths else relative
    hits = result.hits
    if as_json:
        payload = result.to_dict() if explain else [hit.to_dict() for hit in hits]
        for item in payload["hits"] if explain else payload:
            item["display_path"] = relative(item["source"])
        console.print_json(json.dumps(payload, default=str))
        return
    if explain:
        from .explain import print_explanation

        print_explanation(result)
    if not hits:
        console.print("no passages matched")
        return
    if table:
        console.print(hits_table(hits, full=full, shown=shown, raw=raw))
    else:
        print_hits(console, hits, shown, query_matcher(query), raw=raw, full=full)
    if any(hit.weak for hit in hits):
        everything = "every hit is" if all(hit.weak for hit in hits) else "the hits marked weak are"
        console.print(Text(f"{everything} a weak match (relevance below search.weak_cosine for cos, "
                           "answer.unanswerable_below for p): probably not about the query", style="yellow"))


def query_matcher(query: str):  # noqa: ANN201 - text -> matched (start, end) spans
    """The spans of a text's words that match the query's terms, as BM25 sees them (stemmed)."""
    from ..server.highlight import matched_spans, query_terms

    terms = query_terms(query)
    return lambda text: matched_spans(text, terms)


def hits_table(hits: list[Hit], full: bool = False, width: int | None = None, shown=distinguishable,  # noqa: ANN001
               raw: bool = True) -> Table:
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
        where = [inline_plain(hit.section)] if hit.section else []
        where.append(" · ".join([*([f"p. {hit.page}"] if hit.page is not None else []), f"chunk {hit.chunk_index}"]))
        source = Text(shown(hit.source) + (f":{hit.start_line}" if hit.start_line is not None else ""))
        source.append("\n" + "\n".join(where), style="dim")
        body = hit.text if raw else plain_text(hit.text)
        table.add_row(str(hit.rank), score_cell(hit), source, Text(body if full else snippet(body)))
    return table


def score_cell(hit: Hit) -> Text:
    """The fused rank score (it orders the hits), then the relevance that means the same across
    queries, named (``cos 0.47``: dense cosine; ``p 0.91``: the cross-encoder's probability),
    and ``weak`` when it is below the search's threshold, as ``ask`` judges passages."""
    cell = Text(f"{hit.score:.3f}")
    if hit.relevance is not None:
        cell.append(f"\n{relevance_label(hit)}", style="dim")
    if hit.weak:
        cell.append("\nweak", style="yellow")
    return cell


def register(app: typer.Typer) -> None:
    app.command("search")(search_command)
