"""``ragloom context`` (the numbered passages an LLM would read) and ``ragloom ask`` (a cited answer)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from ..errors import UsageError
from ..filters import parse_cli_filters
from ..ingest.files import distinguishable
from ..markup import inline_plain, plain_text
from ..types import Answer
from .render import WrappedStream, code_block, indented, snippet
from .shared import console, err_console, names_of, state

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
    """Print the numbered, token-budgeted context for a question; pipe it into any model.

    Example: ragloom context "how do I enable CORS?" --budget 1500 | llm -s "answer from these passages"
    """
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
    raw: bool = typer.Option(False, "--raw", help="Print the answer and passages as written, with their Markdown."),
    full_paths: bool = typer.Option(False, "--full-paths", help="Show sources by their full path, not relative "
                                    "to the folder that was ingested."),
) -> None:
    """Answer a question from the index, streaming the answer, then the sources it cites.

    With no LLM configured, or only the packaged Qwen models (whose answers measured below
    extractive ones on SQuAD, BENCHMARKS.md "Answers"), auto answers extractively: the passages'
    best sentences, cited. Use your own .gguf as llm.model, another llm.provider, or
    --strategy attributed to answer with an LLM.

    Example: ragloom ask "how do I enable CORS?" --strategy extractive
    """
    options = {"strategy": strategy, "llm": llm, "k": k, "budget": budget,
               "where": parse_cli_filters(where or []), "mode": mode}
    if history is not None:
        options["history"] = read_history(history)
    with state(ctx).open_index() as index:
        if as_json:
            payload = index.ask(question, **options).to_dict()
            shown = index.display_paths()
            for citation in payload["citations"]:
                citation["display_path"] = shown(citation["source"])
            console.print_json(json.dumps(payload, default=str))
            return
        answer, streamed = stream_answer(index.ask_stream(question, **options), raw=raw)
        shown = distinguishable if full_paths else index.display_paths()
    assert answer is not None
    print_answer(answer, streamed, trace, shown=shown, raw=raw)


def stream_answer(pieces: Iterable[str | Answer], raw: bool = False) -> tuple[Answer | None, str]:
    """Print the answer's text as it arrives (plain, wrapped between words); the finished Answer
    and the text that was streamed."""
    answer = None
    streamed = []
    out = WrappedStream(console, raw=raw)
    for piece in pieces:
        if isinstance(piece, Answer):
            answer = piece
        else:
            streamed.append(piece)
            out.write(piece)
    out.close()
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


def print_answer(answer: Answer, streamed: str, trace: bool = False, sources: bool = True,
                 shown: Callable[[str], str] = distinguishable, raw: bool = False) -> None:
    if answer.text.strip() != streamed.strip():  # asked again, or revised after the stream
        console.print(Text("final answer:", style="dim"))
        console.print(answer.text if raw else plain_text(answer.text), highlight=False, markup=False)
    unsupported = answer.unsupported
    if unsupported:
        console.print(Text("not supported by the passages they cite:", style="dim"))
        for sentence in unsupported:
            console.print(Text("  " + sentence.text, style="dim strike" if sentence.support is None else "dim"))
    for warning in answer.warnings:
        _note(warning)
    if sources:
        print_sources(answer, shown, raw)
    label = f"{answer.strategy}" + (f", {answer.model}" if answer.model else "")
    _note(f"{label}; {answer.seconds:.1f} s; context {answer.tokens.get('context', 0)} tokens")
    if trace:
        for step in answer.trace:
            detail = {k: v for k, v in step.to_dict().items() if k not in ("name", "ms", "hits", "passages")}
            console.print(Text(f"{step.name:>28}  {step.ms:9.1f} ms  {json.dumps(detail, default=str)[:160]}",
                               style="dim"), highlight=False)


def print_sources(answer: Answer, shown: Callable[[str], str] = distinguishable, raw: bool = False) -> None:
    if answer.citations:
        console.print()
        console.print(Text("Sources", style="bold"))
    for citation in answer.citations:
        code = citation.hit is not None and citation.hit.is_code
        section = citation.section if code else inline_plain(citation.section).replace(" > ", " › ")
        where = [w for w in (section, f"p. {citation.page}" if citation.page is not None else "") if w]
        line = Text(f"[{citation.number}] ", style="bold")
        line.append(shown(citation.source) + lines_of(citation.start_line, citation.end_line))
        if where:
            line.append(" — " + ", ".join(where), style="cyan")
        console.print(line)
        if code and citation.hit is not None:  # its first lines as written, with their numbers
            for row in code_block(citation.hit, lambda _: [], console.width, size=3):
                row.stylize("dim")
                console.print(row, soft_wrap=True, highlight=False)
            continue
        text = citation.text if raw else plain_text(citation.text)
        for wrapped in indented(Text(snippet(text, limit=240), style="dim"), console.width):
            console.print(wrapped, soft_wrap=True)


def lines_of(start: int | None, end: int | None) -> str:
    """``:12-30`` (or ``:12``) after a path, as editors and terminals open it; "" without lines."""
    if start is None:
        return ""
    return f":{start}" if end is None or end == start else f":{start}-{end}"


def _note(text: str) -> None:
    console.print(Text(text, style="dim"), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("context")(context_command)
    app.command("ask")(ask_command)
