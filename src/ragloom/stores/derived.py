"""Derived indexes (the vector matrix, the BM25 index) are caches: a damaged one is rebuilt.

Any failure to open or query one — a truncated file, garbage in a tantivy segment
(tantivy then panics, which Python sees as a ``BaseException``) — is treated like a
stale generation stamp: the index is rebuilt from the store's truth, once, with a
warning, and the query runs again.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

from ..errors import RagloomError, RagloomWarning, StoreError

T = TypeVar("T")

#: Exceptions that are not about the index: never swallowed.
_NOT_DAMAGE = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError, RagloomError)


def is_damage(exc: BaseException) -> bool:
    """Whether an exception raised by a derived index means the index cannot be trusted."""
    return not isinstance(exc, _NOT_DAMAGE)


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def warn_rebuilding(what: str, exc: BaseException) -> None:
    warnings.warn(
        f"{what} could not be read ({describe(exc)}); rebuilding it from the index database",
        RagloomWarning, stacklevel=4,
    )


def run_or_rebuild(what: str, run: Callable[[], T], rebuild: Callable[[], None]) -> T:
    """``run()``; if it fails because the derived index is damaged, ``rebuild()`` once and run again."""
    try:
        return run()
    except BaseException as exc:
        if not is_damage(exc):
            raise
        warn_rebuilding(what, exc)
    rebuild()
    try:
        return run()
    except BaseException as exc:
        if not is_damage(exc):
            raise
        raise StoreError(
            f"{what} still fails after being rebuilt from the index database ({describe(exc)}); "
            "delete it (it is only a cache) and try again"
        ) from None
