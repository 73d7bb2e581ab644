"""``ragloom chat``: a conversation with the index in the terminal, follow-up questions included."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.text import Text

from ..filters import parse_cli_filters
from .answer import print_answer, print_sources, stream_answer
from .interrupt import stops_on_ctrl_c
from .shared import console, state

HELP = "/sources  the last answer's sources · /explain  how the last turn was searched · /reset  a new conversation · Ctrl-D or Ctrl-C  leave"


def chat_command(
    ctx: typer.Context,
    strategy: Optional[str] = typer.Option(None, "--strategy", "-s", help="Answer strategy (as for ask)."),
    llm: Optional[str] = typer.Option(None, "--llm", help="LLM as PROVIDER[:MODEL] or a local model name."),
    k: Optional[int] = typer.Option(None, "-k", "--top-k", help="Passages to retrieve per turn (default: answer.k)."),
    where: Optional[list[str]] = typer.Option(None, "--where", "-w", help="Metadata filter (repeatable), for every turn."),
    mode: Optional[str] = typer.Option(None, "--mode", "--preset", "-m", "-p", help="Search preset."),
) -> None:
    """Talk to the index: ask, then ask follow-ups ("when did he die?"); each answer cites its sources.

    Example: ragloom chat --strategy extractive
    """
    options = {"strategy": strategy, "llm": llm, "k": k, "where": parse_cli_filters(where or []), "mode": mode}
    _line_editing()
    with stops_on_ctrl_c(), state(ctx).open_index() as index:
        conversation = index.conversation(**options)
        console.print(Text(HELP, style="dim"), highlight=False)
        while True:
            try:
                line = input("you> ").strip()
            except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the prompt: the end of the chat
                console.print()
                return
            if not line:
                continue
            if line.startswith("/"):
                _command(line, conversation, index.display_paths())
                continue
            answer, streamed = stream_answer(conversation.ask_stream(line))
            if answer is not None:
                print_answer(answer, streamed, sources=False)
                if answer.citations:
                    numbers = ", ".join(f"[{n}]" for n in answer.citations.numbers)
                    console.print(Text(f"sources {numbers}: /sources to list them", style="dim"), highlight=False)


def _command(line: str, conversation, shown) -> None:  # noqa: ANN001
    name = line.split()[0].lower()
    last = conversation.last
    if name in ("/sources", "/s"):
        if last is None or not last.citations:
            console.print(Text("no sources yet", style="dim"))
        else:
            print_sources(last, shown)
    elif name in ("/explain", "/e"):
        if last is None:
            console.print(Text("nothing asked yet", style="dim"))
            return
        for step in last.trace:
            detail = {k: v for k, v in step.to_dict().items() if k not in ("name", "ms", "hits", "passages")}
            console.print(Text(f"{step.name:>10}  {step.ms:8.1f} ms  {json.dumps(detail, default=str)[:300]}",
                               style="dim"), highlight=False)
    elif name in ("/reset", "/new"):
        conversation.reset()
        console.print(Text("new conversation", style="dim"))
    elif name in ("/quit", "/exit"):
        raise typer.Exit()
    else:
        console.print(Text(HELP, style="dim"), highlight=False)


def _line_editing() -> None:
    """Arrow keys and a history of earlier questions, where the platform has readline."""
    try:
        import readline  # noqa: F401 - importing it gives input() line editing
    except ImportError:
        pass


def register(app: typer.Typer) -> None:
    app.command("chat")(chat_command)
