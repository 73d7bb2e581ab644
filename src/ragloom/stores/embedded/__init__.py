"""The embedded default store: SQLite (truth) + exact numpy vectors + tantivy BM25."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import EmbeddedStore

__all__ = ["EmbeddedStore"]


def __getattr__(name: str) -> Any:
    # Imported when first asked for, as in ``ragloom.stores``: reading the config imports ``options``.
    if name == "EmbeddedStore":
        from .store import EmbeddedStore

        return EmbeddedStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
