"""How hits and answers look in a terminal: compact blocks, plain text, words never broken.

Passages are Markdown or HTML more often than not; unless ``--raw``, what is printed is the
plain text a reader reads (``ragloom.markup``), with the query's words highlighted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.console import Console
from rich.text import Text

from ..markup import CodeLine, PlainWords, inline_plain, plain_text
from ..types import Hit

#: How a matched word of the query looks in a snippet.
MATCH_STYLE = "bold yellow"
SNIPPET_CHARS = 280
INDENT = "    "


def where_label(hit: Hit) -> str:
    """The section, or the page, a hit is from (one line's worth: the header path's last two titles);
    a code hit's qualified symbol as written (``ProgressBar.__repr__``)."""
    if hit.is_code:
        return str(hit.metadata.get("symbol") or hit.section)
    parts = []
    if hit.section:
        titles = [inline_plain(t) for t in hit.section.split(" > ") if t]
        parts.append(" › ".join(titles[-2:]))
    if hit.page is not None:
        parts.append(f"p. {hit.page}")
    return " · ".join(parts)


def hit_block(hit: Hit, shown_path: str, matcher: Callable[[str], list[tuple[int, int]]], width: int, *,
              raw: bool = False, full: bool = False) -> list[Text]:
    """One hit: ``rank  score  path · section`` on one line (cut short with "…"), then its
    snippet, wrapped between words and indented."""
    head = Text(no_wrap=True, overflow="ellipsis", end="")
    head.append(f"{hit.rank:>2}  ", style="bold")
    relevance = relevance_label(hit)  # what means the same across queries, when the hit has it
    head.append(f"{relevance or f'{hit.score:.3f}'}  ", style="dim")
    if hit.weak:
        head.append("weak  ", style="yellow")
    if hit.start_line is not None:  # path:line, as editors and terminals open it
        shown_path = f"{shown_path}:{hit.start_line}"
    room = width - len(head)
    if len(shown_path) > room:  # the file's name matters most: cut the path's start
        shown_path = "…" + shown_path[-(room - 1):]
    head.append(shown_path, style="bold cyan")
    label = where_label(hit)
    if label and len(head) + 4 < width:  # the section, if a few of its letters fit
        head.append(" · " + label, style="dim")
    head.truncate(width, overflow="ellipsis")
    if hit.is_code:
        return [head, *code_block(hit, matcher, width, full=full)]
    body = hit.text if raw else plain_text(hit.text)
    text = body if full else snippet(body, matcher)
    passage = Text(text)
    for start, end in matcher(text):
        passage.stylize(MATCH_STYLE, start, end)
    return [head, *indented(passage, width)]


#: Lines of a code hit shown without ``--full``.
CODE_LINES = 10


def code_window(rows: list[tuple[int | None, str]], matcher: Callable[[str], list[tuple[int, int]]],
                size: int = CODE_LINES) -> tuple[int, int]:
    """The rows to show: ``size`` of them around the line that matches the query best (the first
    of the passage's own lines when none does)."""
    own = [i for i, (number, _) in enumerate(rows) if number is not None] or list(range(len(rows)))
    counts = [len(matcher(line)) for _, line in rows]
    # A definition's first line, when it matches, is what to show (``def print(`` for ``Console.print``).
    best = own[0] if counts[own[0]] or not any(counts[i] for i in own) else max(own, key=lambda i: (counts[i], -i))
    start = max(min(best - size // 3, len(rows) - size), 0)
    return start, min(start + size, len(rows))


def code_block(hit: Hit, matcher: Callable[[str], list[tuple[int, int]]], width: int, *,
               full: bool = False, size: int = CODE_LINES) -> list[Text]:
    """A code hit as its lines, verbatim, each after its number in the file, centred on the lines
    that matched (``size`` of them; all with ``full``); lines too long for the terminal end in "…"."""
    rows = hit.numbered_lines()
    start, end = (0, len(rows)) if full else code_window(rows, matcher, size)
    digits = len(str(max((n for n, _ in rows if n is not None), default=0)))
    out = []
    if start:
        out.append(Text(INDENT + " " * digits + " ⋮", style="dim"))
    for number, line in rows[start:end]:
        code = Text(line.expandtabs(4))
        for s, e in matcher(code.plain):
            code.stylize(MATCH_STYLE, s, e)
        row = Text(INDENT, no_wrap=True, overflow="ellipsis", end="")
        row.append(f"{number if number is not None else '':>{digits}} │ ", style="dim")
        row.append(code)
        row.truncate(width, overflow="ellipsis")
        out.append(row)
    if end < len(rows):
        out.append(Text(INDENT + " " * digits + " ⋮", style="dim"))
    return out


#: How the terminal names a hit's relevance (``Hit.relevance_kind``).
RELEVANCE_LABEL = {"rerank_probability": "p", "dense": "cos"}


def relevance_label(hit: Hit) -> str | None:
    """``cos 0.47`` (the dense cosine) or ``p 0.91`` (the cross-encoder's probability), or None."""
    if hit.relevance is None:
        return None
    return f"{RELEVANCE_LABEL.get(hit.relevance_kind or '', '')} {hit.relevance:.2f}".strip()


def indented(text: Text, width: int) -> list[Text]:
    """``text`` wrapped between words to fit ``width`` after an indent, each line indented."""
    inner = max(width - len(INDENT), 20)
    lines = text.wrap(Console(width=inner), inner)
    for line in lines:
        line.rstrip()
    return [Text(INDENT) + line for line in lines]


def print_hits(console: Console, hits: list[Hit], shown: Callable[[str], str],
               matcher: Callable[[str], list[tuple[int, int]]], *, raw: bool = False, full: bool = False) -> None:
    for number, hit in enumerate(hits):
        if number:
            console.print()
        # Wrapped at the console's width also in a pipe, where notices keep to one line.
        for line in hit_block(hit, shown(hit.source), matcher, console.width, raw=raw, full=full):
            console.print(line, highlight=False, soft_wrap=True)


def snippet(text: str, matcher: Callable[[str], list[tuple[int, int]]] | None = None,
            limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters around its first matched word."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    spans = matcher(flat) if matcher else []
    start = 0
    if spans and spans[0][1] > limit - 40:  # the first match would be cut off: start near it
        start = flat.rfind(" ", 0, max(0, spans[0][0] - 60)) + 1
    end = start + limit - 2
    cut = flat[start:end].rsplit(" ", 1)[0] if end < len(flat) else flat[start:]
    return ("… " if start else "") + cut + (" …" if start + len(cut) < len(flat) else "")


class WrappedStream:
    """Prints text as it arrives, wrapping at the terminal's width between words, never inside
    one (a word longer than a line is the only one broken). Without a terminal it does not wrap."""

    def __init__(self, console: Console, raw: bool = False) -> None:
        self.console = console
        self.width = console.width if console.is_terminal else 0
        self.column = 0
        self._plain = None if raw else PlainWords()
        self._pending = ""
        self._space = ""

    def write(self, piece: str) -> None:
        words = self._plain.feed(piece) if self._plain is not None else self._raw_words(piece)
        for word in words:
            self._put(word)

    def close(self) -> None:
        rest = self._plain.end() if self._plain is not None else [self._pending]
        self._pending = ""
        for word in rest:
            self._put(word)
        self.console.print()

    def _raw_words(self, piece: str) -> Iterable[str]:
        import re

        self._pending += piece
        *done, self._pending = re.split(r"(?<=\s)(?=\S)", self._pending)
        return done

    def _put(self, word: str) -> None:
        """``word`` with the whitespace after it; a line break in it starts a new line. The space
        after a word is written only before the next word on the same line, so a line never
        ends with a space that a terminal would carry over. A line of code is written as it is."""
        if isinstance(word, CodeLine):
            if self.column:
                self.console.out("\n", end="", highlight=False)
            self.console.out(word.rstrip("\n").expandtabs(4), highlight=False)  # with its line break
            self.column, self._space = 0, ""
            return
        for number, line in enumerate(word.split("\n")):
            if number:
                self.console.out("\n", end="", highlight=False)
                self.column, self._space = 0, ""
            body = line.strip(" ")
            if body:
                space = self._space if self.column else ""
                if self.width and self.column and self.column + len(space) + len(body) > self.width:
                    self.console.out("\n", end="", highlight=False)
                    self.column, space = 0, ""
                self.console.out(space + body, end="", highlight=False)
                self.column += len(space) + len(body)
            self._space = line[len(line.rstrip(" ")):] if body else self._space + line
