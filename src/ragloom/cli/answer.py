"""``ragloom context`` (the numbered passages an LLM would read) and ``ragloom ask`` (a cited answer)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from ..errors import UsageError
from ..filters import parse_cli_filters
from ..types import Answer
from .shared import console, display_path, err_console, names_of, state
from .search import snippet

_WHERE_HELP = ("Metadata filter: key=value, key!=v, key<v, key>v, key*=text (contains), key~a,b (one of); "
               "source=cors.md, source=tutorial/cors.md or source='**/cors.md' (repeatable).")


def context_command(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="The question the context is for."),
    budget: Optional[int] = typer.Option(None, "--budget", "-b", help="Most tokens of context (default: answer.budget)."),
    k: Optional[int] = typer.Option(None, "-k", "--top-k", help="Passages to retrieve (default: answer.k)."),
    where: Optional[list[str]] = typer.Option(None, "--where", "-w", help=_WHERE_HELP),
    mode: Optional[str] = typer.Option(None, "--mode", "--preset", "-m", "-p", help="Search preset."),
    as_json: bool = typer.Option(False, "--json", help="Print the passages and the token count as JSON."),
) -> None:
    """Print the numbered, token-budgeted context for a question; pipe it into any model."""
    with state(ctx).open_index() as index:
        context = index.context(question, budget=budget, k=k, where=parse_cli_filters(where or []), mode=mode)
    if as_json:
        console.print_json(json.dumps(context.to_dict(), default=str))
        return
    # Plain print: the context is meant to be copied or piped as it is.
    print(context.render())
    # Notes go to stderr, so that `ragloom context q | llm` pipes only the context.
    for note in context.notes:
        err_console.print(Text(f"note: {note}", style="dim"), highlight=False)
    err_console.print(Text(f"{context.tokens} tokens of {context.budget}, {len(context.passages)} passages",
                           style="dim"), highlight=False)


def ask_command(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="A question about the indexed documents."),
    strategy: Optional[str] = typer.Option(
        None, "--strategy", "-s",
        help="auto (default: attributed with an LLM other than the packaged Qwen models, else extractive), "
        f"or one of: {names_of('strategy')} (extractive needs no LLM).",
    ),
    llm: Optional[str] = typer.Option(
        None, "--llm", help="LLM as PROVIDER[:MODEL] (ollama:llama3.2, openai:gpt-4o-mini) or a local model name "
        "(qwen2.5-coder-0.5b, qwen2.5-coder-1.5b)."
    ),
    k: Optional[int] = typer.Option(None, "-k", "--top-k", help="Passages to retrieve (default: answer.k)."),
    budget: Optional[int] = typer.Option(None, "--budget", "-b", help="Most tokens of context (default: answer.budget)."),
    where: Optional[list[str]] = typer.Option(None, "--where", "-w", help=_WHERE_HELP),
    mode: Optional[str] = typer.Option(None, "--mode", "--preset", "-m", "-p", help="Search preset."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole Answer as JSON (no streaming)."),
    trace: bool = typer.Option(False, "--trace", help="Also print each step of answering, with its time."),
    history: Optional[Path] = typer.Option(
        None, "--history", help="JSON file of the conversation so far: [{\"role\": \"user\", \"content\": ...}, ...]; "
        "the question is then a follow-up, searched standalone."
    ),
) -> None:
    """Answer a question from the index, streaming the answer, then the sources it cites."""
    options = {"strategy": strategy, "llm": llm, "k": k, "budget": budget,
               "where": parse_cli_filters(where or []), "mode": mode}
    if history is not None:
        options["history"] = read_history(history)
    with state(ctx).open_index() as index:
        if as_json:
            answer = index.ask(question, **options)
            console.print_json(json.dumps(answer.to_dict(), default=str))
            return
        answer, streamed = stream_answer(index.ask_stream(question, **options))
    assert answer is not None
    print_answer(answer, streamed, trace)


def stream_answer(pieces: Iterable[str | Answer]) -> tuple[Answer | None, str]:
    """Print the answer's text as it arrives; the finished Answer and the text that was printed."""
    answer = None
    streamed = []
    for piece in pieces:
        if isinstance(piece, Answer):
            answer = piece
        else:
            streamed.append(piece)
            console.print(piece, end="", highlight=False, markup=False, soft_wrap=True)
    console.print()
    return answer, "".join(streamed)


def read_history(path: Path) -> list[dict]:
    """A conversation's earlier messages from a JSON file: a list of {"role", "content"} (or {"messages": [...]})."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the history file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise UsageError(f"the history file {path} is not JSON ({exc}); write a list of "
                         '{"role": "user"|"assistant"|"system", "content": "..."}') from exc
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list):
        raise UsageError(f"the history file {path} must hold a list of messages")
    return data


def print_answer(answer: Answer, streamed: str, trace: bool = False, sources: bool = True) -> None:
    if answer.text.strip() != streamed.strip():  # asked again, or revised after the stream
        console.print(Text("final answer:", style="dim"))
        console.print(answer.text, highlight=False, markup=False)
    unsupported = answer.unsupported
    if unsupported:
        console.print(Text("not supported by the passages they cite:", style="dim"))
        for sentence in unsupported:
            console.print(Text("  " + sentence.text, style="dim strike" if sentence.support is None else "dim"))
    for warning in answer.warnings:
        _note(warning)
    if sources:
        print_sources(answer)
    label = f"{answer.strategy}" + (f", {answer.model}" if answer.model else "")
    _note(f"{label}; {answer.seconds:.1f} s; context {answer.tokens.get('context', 0)} tokens")
    if trace:
        for step in answer.trace:
            detail = {k: v for k, v in step.to_dict().items() if k not in ("name", "ms", "hits", "passages")}
            console.print(Text(f"{step.name:>28}  {step.ms:9.1f} ms  {json.dumps(detail, default=str)[:160]}",
                               style="dim"), highlight=False)


def print_sources(answer: Answer) -> None:
    if answer.citations:
        console.print()
        console.print(Text("Sources", style="bold"))
    for citation in answer.citations:
        where = [w for w in (citation.section, f"p. {citation.page}" if citation.page is not None else "") if w]
        line = Text(f"[{citation.number}] ", style="bold")
        line.append(display_path(citation.source))
        if where:
            line.append(" — " + ", ".join(where), style="cyan")
        console.print(line)
        console.print(Text("    " + snippet(citation.text, 240), style="dim"))


def _note(text: str) -> None:
    console.print(Text(text, style="dim"), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("context")(context_command)
    app.command("ask")(ask_command)
