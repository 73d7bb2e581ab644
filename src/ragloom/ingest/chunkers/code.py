"""Source code cut by definition: a function, a method, a class, the module's top level.

tree-sitter parses the file (``_syntax``). A definition that fits ``chunk_size`` is one chunk,
with its decorators, signature, docstring and the comments right above it. A class too large
for one chunk becomes its header (signature, docstring, fields) and one chunk per method, each
method's chunk led by the class's first line (not its doc comment), so ``def save(self)`` still
says which class it belongs to. A function too large for one chunk is cut between its
statements, each piece after the first led by the signature (``part`` numbers the pieces). A
namespace or module is opened, never one chunk. Code outside any definition (imports,
constants, a ``__main__`` block) is cut by lines. SQL is cut by statement without a grammar
(``_sql``). A file that does not parse, or whose language has no grammar installed, is cut by
lines, as plain text is.

Every chunk carries ``language``, ``symbol`` (the qualified name, ``Class.method``), ``kind``
(function, method, class, module, lines, or an SQL object's kind) and ``symbols``, the keys it is
looked up by (``ragloom.symbols``: its path's tails in the module, and those of what a definition
kept whole defines inside it); its section is its symbol as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import Any

import numpy as np

from ...config import CODE_LANGUAGES
from ...symbols import SYMBOLS_FIELD, module_parts, split_symbol, symbol_keys
from ...types import Chunk, Document
from ._split import split_recursive
from ._sql import statements
from ._syntax import CONTAINERS, MAX_ERROR_SHARE, Definition, body_of, definitions_in, error_share, parser_for, receiver_of
from ._tokens import TokenMeter
from .base import Chunker, Span

#: The longest signature or class header repeated before a piece of its body.
MAX_HEADER_CHARS = 400
#: A definition kept whole is also looked up by the names it defines inside, at most this many.
MAX_MEMBERS = 40
_MEMBERS = "_members"
_WORD = re.compile(r"\w")
#: How comment lines start in the languages read (a class's doc comment is not its header).
_COMMENTS = ("#", "//", "/*", "*", "--", "'''", '"""')


class CodeChunker(Chunker):
    name = "code"
    #: 2: every chunk carries its symbol's lookup keys (``symbols``).
    version = "2"

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The chunks, each one's section its qualified symbol as written (``ProgressBar.__repr__``)."""
        for c in super().iter_chunks(document):
            yield replace(c, metadata={**c.metadata, "section": c.metadata.get("symbol") or c.metadata["section"]})

    def split(self, document: Document) -> list[Span]:
        module = module_parts(document.doc_id)
        return [_with_keys(span, module) for span in self._split(document)]

    def _split(self, document: Document) -> list[Span]:
        language = document.metadata.get("language") or CODE_LANGUAGES.get(PurePath(document.doc_id).suffix.lower(), "")
        parser = parser_for(language) if language else None
        meter = self.meter(document)
        if language == "sql":
            return self._sql(meter, PurePath(document.doc_id).stem)
        if parser is None:
            return self._lines(meter, 0, len(document.text), PurePath(document.doc_id).stem)
        data = document.text.encode("utf-8")
        root = parser.parse(data).root_node
        if error_share(root) > MAX_ERROR_SHARE:
            return self._lines(meter, 0, len(document.text), PurePath(document.doc_id).stem)
        cut = _Cutter(meter, _CharOffsets(document.text, data), language, self)
        spans = cut.container(0, len(data), list(definitions_in(root, language)), (), "", PurePath(document.doc_id).stem)
        return sorted(spans, key=lambda span: span.start)

    def _sql(self, meter: TokenMeter, module: str) -> list[Span]:
        """SQL by statement (``_sql``): each statement creating a table, view, function … is a
        definition named after it; the statements between them are the file's code, cut by lines."""
        spans: list[Span] = []
        rest_start = 0
        for statement in statements(meter.text):
            if not statement.kind:
                continue
            spans += self._lines(meter, rest_start, statement.start, module, "module")
            size_ok = meter.count(statement.start, statement.end) <= self.config.chunk_size
            pieces = [(statement.start, statement.end)] if size_ok else split_recursive(
                meter, statement.start, statement.end, self.config.chunk_size, 0)
            spans += [Span(s, e, (statement.name,), {"symbol": statement.name, "kind": statement.kind})
                      for s, e in pieces]
            rest_start = statement.end
        return spans + self._lines(meter, rest_start, len(meter.text), module, "module")

    def _lines(self, meter: TokenMeter, start: int, end: int, module: str, kind: str = "lines") -> list[Span]:
        if not _WORD.search(meter.text, start, end):
            return []
        return [Span(s, e, (module,), {"symbol": module, "kind": kind})
                for s, e in split_recursive(meter, start, end, self.config.chunk_size, 0)
                if _WORD.search(meter.text, s, e)]


def _with_keys(span: Span, module: list[str]) -> Span:
    """``span`` with the keys its symbol is looked up by (``ragloom.symbols``); a module's own
    code (imports, constants) is looked up by the module's path."""
    own = () if span.metadata.get("kind") in ("module", "lines") else span.section_path
    path = [part for name in own for part in split_symbol(name)]
    metadata = dict(span.metadata)
    keys = symbol_keys(module, path)
    for member in metadata.pop(_MEMBERS, None) or ():
        keys += symbol_keys(module, [*path, *split_symbol(member)])
    metadata[SYMBOLS_FIELD] = list(dict.fromkeys(keys))
    return Span(span.start, span.end, span.section_path, metadata, span.prefix)


class _CharOffsets:
    """Character offsets of tree-sitter's byte offsets (the same for ASCII text)."""

    def __init__(self, text: str, data: bytes) -> None:
        self._ends: np.ndarray | None = None
        if len(data) != len(text):
            widths = np.fromiter((len(c.encode("utf-8")) for c in text), dtype=np.int64, count=len(text))
            self._ends = np.cumsum(widths)

    def __call__(self, byte: int) -> int:
        if self._ends is None:
            return byte
        return int(np.searchsorted(self._ends, byte, side="right"))


class _Cutter:
    def __init__(self, meter: TokenMeter, chars: _CharOffsets, language: str, chunker: CodeChunker) -> None:
        self.meter = meter
        self.text = meter.text
        self.chars = chars
        self.language = language
        self.size = chunker.config.chunk_size
        self.count_tokens = chunker.count_tokens

    def container(self, start: int, end: int, inner: Sequence[Definition], scope: tuple[str, ...], prefix: str,
                  symbol: str, in_type: bool = False) -> list[Span]:
        """Spans of the bytes ``start..end``: one set per inner definition, the rest cut by lines
        as ``symbol``'s own code (a class's header and fields, a module's top level)."""
        spans: list[Span] = []
        position = self.chars(start)
        kind = "class" if in_type else "module"
        header = prefix
        for definition in inner:
            def_start = self._line_start(self.chars(definition.start), position)
            first = position == self.chars(start)
            if in_type and first:
                header = prefix + self._header(position, def_start)
            spans.extend(self._rest(position, def_start, scope, symbol, kind, prefix if first else header))
            spans.extend(self.definition(definition, def_start, scope, header, in_type))
            position = self.chars(definition.end)
        spans.extend(self._rest(position, self.chars(end), scope, symbol, kind, header))
        return spans

    def definition(self, found: Definition, start: int, scope: tuple[str, ...], prefix: str,
                   in_type: bool) -> list[Span]:
        name = found.name or found.node.type
        receiver = receiver_of(found.node)
        path = (*scope, *((receiver,) if receiver and not scope else ()), name)
        kind = ("module" if found.node.type in CONTAINERS else "class" if found.is_type
                else "method" if in_type or receiver else "function")
        end = self.chars(found.end)
        core = found.node.child_by_field_name("definition") or found.node  # inside a decorator
        if found.node.type in CONTAINERS:  # a namespace or module: its members, each on its own
            inner = list(definitions_in(core, self.language))
            if inner:
                return self.container(found.start, found.end, inner, path, prefix, ".".join(path))
        if self._tokens(start, end, prefix) <= self.size:
            whole = self._span(start, end, path, kind, prefix)
            # What it defines inside (a small class's methods, a function's nested ones) is found in it.
            whole.metadata[_MEMBERS] = [d.name for d in definitions_in(core, self.language) if d.name][:MAX_MEMBERS]
            return [whole]
        if found.is_type:
            inner = list(definitions_in(core, self.language))
            if inner:
                return self.container(found.start, found.end, inner, path, prefix, ".".join(path), in_type=True)
        else:
            pieces = self._statements(core, start, end, path, kind, prefix)
            if pieces:
                return pieces
        cut = split_recursive(self.meter, start, end, self.size, 0)
        return [self._span(s, e, path, kind, prefix, n if len(cut) > 1 else 0) for n, (s, e) in enumerate(cut, 1)]

    def _statements(self, node: Any, start: int, end: int, path: tuple[str, ...], kind: str,
                    prefix: str) -> list[Span]:
        """A function cut between the statements of its body; pieces after the first led by its signature."""
        body = body_of(node)
        statements = [self.chars(s.start_byte) for s in body.named_children] if body is not None else []
        if len(statements) < 2:
            return []
        signature = self.text[start : self.chars(body.start_byte)].strip("\n").rstrip()[:MAX_HEADER_CHARS]
        lead = prefix + signature + "\n"
        budget = max(self.size - self.count_tokens(lead), self.size // 2)
        pieces: list[Span] = []
        piece_start = start
        for boundary in statements[1:]:
            boundary = self._line_start(boundary, piece_start)
            if self._tokens(piece_start, boundary, "") > (budget if pieces else self.size) and boundary > piece_start:
                pieces.append(self._span(piece_start, boundary, path, kind, lead if pieces else prefix, len(pieces) + 1))
                piece_start = boundary
        pieces.append(self._span(piece_start, end, path, kind, lead if pieces else prefix, len(pieces) + 1))
        return pieces

    def _rest(self, start: int, end: int, scope: tuple[str, ...], symbol: str, kind: str, prefix: str) -> list[Span]:
        """Code between definitions, cut by lines; nothing for blank lines and lone brackets."""
        if not _WORD.search(self.text, start, end):
            return []
        path = scope or (symbol,)
        return [self._span(s, e, path, kind, prefix) for s, e in split_recursive(self.meter, start, end, self.size, 0)
                if _WORD.search(self.text, s, e)]

    def _span(self, start: int, end: int, path: tuple[str, ...], kind: str, prefix: str, part: int = 0) -> Span:
        """A span of one definition; ``part`` numbers the pieces of a definition cut in several (from 1)."""
        metadata: dict[str, Any] = {"symbol": ".".join(path), "kind": kind}
        if part and (part > 1 or kind in ("function", "method")):
            metadata["part"] = part
        return Span(start, end, path, metadata, prefix)

    def _header(self, start: int, end: int) -> str:
        """The first line of a class, with the decorators and attributes right above it (not its doc
        comment, which its own chunk holds): what leads its members' chunks."""
        kept: list[str] = []
        for line in self.text[start:end].strip().splitlines():
            stripped = line.lstrip()
            if stripped.startswith(("@", "#[", "[")) and not stripped.startswith("[["):  # decorators, attributes
                kept.append(line)
            elif stripped and not stripped.startswith(_COMMENTS):
                kept.append(line)
                break
        return "\n".join(kept)[:MAX_HEADER_CHARS] + "\n" if kept else ""

    def _line_start(self, offset: int, floor: int) -> int:
        """``offset`` moved back to its line's start over what precedes it there (``export``, ``pub``)."""
        line = max(self.text.rfind("\n", floor, offset) + 1, floor)
        between = self.text[line:offset]
        return line if not any(mark in between for mark in (";", "}", "{")) else offset

    def _tokens(self, start: int, end: int, prefix: str) -> int:
        return self.meter.count(start, end) + (self.count_tokens(prefix) if prefix else 0)
