"""Symbol names as a code index keeps them and as a developer types them.

A code chunk's definition has a qualified path: the module it is in (``rich/style.py`` ->
``rich.style``) and its own path (``Style.parse``). The chunker stores, in the chunk's
``symbols`` metadata, every tail of that path (and of the paths of what a definition kept
whole defines inside it: a small class's methods) in two forms:

- exact: ``=Style.parse``, ``=parse``, ``=rich.style.Style.parse`` …
- loose: ``~style.parse`` …, each part lower-cased without ``_`` and ``-`` (``parse_set``,
  ``parseSet`` and ``PARSE_SET`` are one loose name)

Every store filters on a list-valued metadata field with ``$in``, so looking a name up is a
filtered search on ``symbols`` (``retrieve/symbols.py``): exact tails first, then loose ones.
This module is below both sides so that the chunker and the query use the same keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

#: The metadata field holding a chunk's lookup keys.
SYMBOLS_FIELD = "symbols"
EXACT, LOOSE = "=", "~"
#: How a qualified name separates its parts in the languages read (``a.b``, ``A::b``, ``a->b``, ``A#b``).
_SEPARATOR = re.compile(r"::|->|[.#:\\/]")
_LOOSE_DROP = re.compile(r"[_\-$]")
#: Path parts that do not name a module (``pkg/__init__.py`` is ``pkg``; ``src/`` is a layout folder).
_NOT_MODULES = {"__init__", "__main__", "index", "mod", "src", "lib", ""}
#: The longest tail kept: a deeper path is still found by its shorter tails.
MAX_PARTS = 6


def split_symbol(name: str) -> list[str]:
    """``"pkg.mod.Class.method"`` -> its parts; ``A::b`` and ``A#b`` too; ``()`` dropped."""
    name = name.strip().removesuffix("()")
    return [part for part in _SEPARATOR.split(name) if part]


def module_parts(doc_id: str) -> list[str]:
    """The module path of a source file: ``rich/style.py`` -> ``["rich", "style"]``,
    ``pkg/__init__.py`` -> ``["pkg"]``."""
    path = PurePosixPath(doc_id.replace("\\", "/"))
    parts = [*path.parent.parts, path.stem]
    return [part for part in parts if part not in _NOT_MODULES and part not in ("/", ".", "..")]


def loose(part: str) -> str:
    return _LOOSE_DROP.sub("", part).lower()


def symbol_keys(module: Sequence[str], path: Sequence[str]) -> list[str]:
    """The lookup keys of a definition at ``path`` inside ``module``: every tail of the qualified
    path, exact and loose (tails of the definition's own path, then with its modules before it)."""
    full = [*module, *path][-MAX_PARTS:]
    tails = [full[len(full) - n:] for n in range(1, len(full) + 1)]
    keys = [EXACT + ".".join(tail) for tail in tails] + [LOOSE + ".".join(loose(p) for p in tail) for tail in tails]
    return list(dict.fromkeys(keys))


def query_keys(name: str) -> tuple[list[str], list[str]]:
    """The exact and the loose key a typed name is looked up by (empty when it has no parts)."""
    parts = split_symbol(name)
    if not parts:
        return [], []
    return [EXACT + ".".join(parts)], [LOOSE + ".".join(loose(p) for p in parts)]
