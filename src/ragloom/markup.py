"""Markdown and HTML as plain text, for a terminal: what a reader reads, without the symbols.

Stored passages keep their markup (offsets into the source must hold); this is only what is
shown. ``plain_text`` takes a whole text; ``PlainWords`` does the same to an answer that
arrives a few characters at a time, word by word, so it can be printed as it streams.
"""

from __future__ import annotations

import html
import re

from .ingest.chunkers.markdown import heading_title

# A backtick fence's info string holds no backticks (CommonMark): "```py x``` [2]" is inline code.
_FENCE = re.compile(r"^ {0,3}(?:`{3,}[^`\n]*|~{3,}.*)$", re.MULTILINE)
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_BARE_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]*$", re.MULTILINE)
_SETEXT = re.compile(r"^ {0,3}(?:=+|-{2,})[ \t]*$", re.MULTILINE)
_RULE = re.compile(r"^ {0,3}(?:[-*_][ \t]*){3,}$", re.MULTILINE)
_QUOTE = re.compile(r"^ {0,3}>[ \t]?", re.MULTILINE)
_TABLE_RULE = re.compile(r"^ {0,3}\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*(?:\n|\Z)", re.MULTILINE)
_TABLE_EDGE = re.compile(r"^([ \t]*)\|[ \t]*|[ \t]*\|[ \t]*$", re.MULTILINE)
_TABLE_CELL = re.compile(r"[ \t]+\|[ \t]+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()\s]+|[^()]*\([^()]*\)[^()]*)(?:[ \t]+\"[^\"]*\")?\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_INLINE_ATTRIBUTES = re.compile(r"(?<=[)\]])\{:?[ \t]*[#.][^{}\n]*\}")
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[^<>]*?)?/?>|<!--.*?-->", re.DOTALL)
_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.DOTALL)
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?!\*)|(?<![\w_])_(?=\S)([^_]+?)(?<=\S)_(?!\w)")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~", re.DOTALL)


#: A fenced code block: its lines are code, kept as written (only the fence lines go).
_FENCED = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<code>.*?)(?:^ {0,3}(?P=fence)[`~]*[ \t]*$|\Z)",
                     re.MULTILINE | re.DOTALL)


def plain_text(text: str) -> str:
    """``text`` (Markdown, maybe with HTML in it) as plain text: no heading marks, emphasis
    marks, backticks, fences, HTML tags or link targets; citations like ``[2]`` stay. Fenced
    code is kept as written, line by line: ``**kwargs`` is not emphasis there."""
    pieces: list[str] = []
    at = 0
    for block in _FENCED.finditer(text):
        pieces += [_plain_prose(text[at:block.start()]), block.group("code").rstrip("\n")]
        at = block.end()
    pieces.append(_plain_prose(text[at:]))
    return "\n".join(piece for piece in pieces if piece.strip()).strip("\n")


def _plain_prose(text: str) -> str:
    tables = bool(_TABLE_RULE.search(text))  # a | is a cell's edge only in a table (`URL | str` is code)
    text = _FENCE.sub("", text)
    text = _HEADING.sub(lambda m: heading_title(m.group(1)), text)
    text = _BARE_HEADING.sub("", text)
    text = _TABLE_RULE.sub("", text)
    text = _SETEXT.sub("", text)
    text = _RULE.sub("", text)
    text = _QUOTE.sub("", text)
    if tables:
        text = "\n".join(_row_plain(line) for line in text.split("\n"))
    return _BLANK_RUNS.sub("\n\n", inline_plain(text)).strip("\n")


def _row_plain(line: str) -> str:
    """A table row's cells two spaces apart; a line that is no row (one ``|``, as in code) as it is."""
    if not (line.lstrip().startswith("|") or line.count("|") >= 2):
        return line
    return _TABLE_CELL.sub("  ", _TABLE_EDGE.sub(lambda m: m.group(1) or "", line))


def inline_plain(text: str) -> str:
    """The inline markup of ``text`` removed: code spans, emphasis, links, images, tags, and the
    attribute lists MkDocs and kramdown put after a link (``{.internal-link target=_blank}``). A
    code span's content is kept as written (`` `__init__` `` stays ``__init__``, not "init")."""
    text = _INLINE_ATTRIBUTES.sub("", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    pieces: list[str] = []
    at = 0
    for span in _CODE.finditer(text):
        pieces += [_inline_prose(text[at:span.start()]), span.group(2).strip(" ") or span.group(2)]
        at = span.end()
    return "".join(pieces + [_inline_prose(text[at:])])


def _inline_prose(text: str) -> str:
    text = _TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _STRIKE.sub(r"\1", text)
    text = _EMPHASIS.sub(lambda m: m.group(1) or m.group(2), text)
    return html.unescape(text)


class PlainWords:
    """An answer's text as it streams, given back as plain words (``feed``, then ``end``).

    A word is only given back once the space after it has arrived, so markup split across
    pieces (``**bo`` + ``ld**``) is removed whole; an HTML tag with spaces in it (``<a href=...>``)
    is held until it closes. A line that is a heading, a code fence or a table row is held
    until its end and given back as ``plain_text`` makes it.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._at_line_start = True
        self._fence: str | None = None

    def feed(self, piece: str) -> list[str]:
        """Whole words and the whitespace after each (plain), from what has arrived so far; the
        lines of a fenced code block whole and as written (``CodeLine``)."""
        self._pending += piece
        out: list[str] = []
        while self._pending:
            if self._fence is not None:
                code = self._code_line()
                if code is None:
                    break
                if code:
                    out.append(code)
                continue
            taken = self._line() if self._at_line_start else None
            if taken is _WAIT:
                break
            if taken is None:
                taken = self._word()
            if taken is None:
                break
            if taken:
                out.append(taken)
        return out

    def end(self) -> list[str]:
        """What is left when the answer is complete."""
        rest, self._pending = self._pending, ""
        if self._fence is not None:
            self._fence = None
            return [CodeLine(line + "\n") for line in rest.rstrip("\n").split("\n")
                    if not line.strip().startswith(("```", "~~~"))] if rest.strip() else []
        plain = plain_text(rest).strip() if rest.strip() else ""
        return [plain] if plain else []

    def _code_line(self) -> str | None:
        """Inside a fenced block: its next line as written, "" for the closing fence, None to wait."""
        newline = self._pending.find("\n")
        if newline < 0:
            return None
        line, self._pending = self._pending[:newline], self._pending[newline + 1:]
        if line.strip().startswith(self._fence) and not line.strip().strip(self._fence[0]):
            self._fence = None
            self._at_line_start = True
            return ""
        return CodeLine(line + "\n")

    def _line(self) -> object:
        """At a line's start: a whole special line as plain text, None when the line is ordinary,
        ``_WAIT`` when that cannot be told yet."""
        head = self._pending.lstrip(" ")
        if not head or len(head) < 3 and "\n" not in head and head.strip("#`~|") == "":
            return _WAIT  # "#", "``": cannot be told yet
        if not _SPECIAL_LINE.match(head):
            self._at_line_start = False
            return None
        newline = self._pending.find("\n")
        if newline < 0:
            return _WAIT
        line, self._pending = self._pending[:newline], self._pending[newline + 1:]
        opened = _OPENING_FENCE.match(line)
        if opened:  # a code block: its lines come back as written until the fence closes
            self._fence = opened.group(1)
            return ""
        plain = plain_text(line).strip()
        return plain + "\n" if plain else ""

    def _word(self) -> str | None:
        match = re.search(r"\s+", self._pending)
        if match is None or (match.end() == len(self._pending) and "\n" not in match.group()):
            return None  # the word (or the space after it) may go on in the next piece
        word = self._pending[: match.start()]
        if word.count("[") > word.count("]"):  # a link whose text has spaces: [the docs](url)
            close = _LINK_END.match(self._pending)
            if close is None and "\n" not in self._pending and len(self._pending) < 500:
                return None
            if close is not None:
                match = re.compile(r"\s+|$").search(self._pending, close.end())
                if match is None or (match.end() == len(self._pending) and "\n" not in match.group()):
                    return None
                word = self._pending[: match.start()]
        if _open_tag(word):
            closing = self._pending.find(">", match.start())
            if closing < 0:
                return None
            after = re.match(r"[ \t]*", self._pending[closing + 1:])
            end = closing + 1 + (after.end() if after else 0)
            word, gap = self._pending[:closing + 1], self._pending[closing + 1:end]
        else:
            gap, end = match.group(), match.end()
        self._pending = self._pending[end:]
        self._at_line_start = "\n" in gap
        plain = _EDGE_MARKS.sub("", inline_plain(word))
        return plain + gap if plain or "\n" in gap else ""


class CodeLine(str):
    """A line of a fenced code block, given back whole: printed as written, never wrapped."""


_OPENING_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^`]*$")
_WAIT = object()
#: A link's text and target, from the ``[`` at the start of a word: ``[the docs](url)``.
_LINK_END = re.compile(r"[^\[]*\[[^\]\n]*\](?:\([^)\s]*\))?")
#: Emphasis and code marks left at a word's edges when their span holds several words.
_EDGE_MARKS = re.compile(r"^(?:\*\*|__|~~|`+|\*)(?=\w)|(?<=[\w.,;:!?)])(?:\*\*|__|~~|`+|\*)(?=[.,;:!?)]*$)")
#: A line that is a heading, a code fence or a table row: plain only when whole.
_SPECIAL_LINE = re.compile(r"#{1,6}(?:\s|$)|`{3,}|~{3,}|\|")


def _open_tag(word: str) -> bool:
    """Whether ``word`` begins an HTML tag that goes on after a space (``<a``)."""
    return re.search(r"<[A-Za-z][\w:-]*[^>]*$", word) is not None
