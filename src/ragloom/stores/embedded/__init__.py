"""The embedded default store: SQLite (truth) + exact numpy vectors + tantivy BM25."""

from .store import EmbeddedStore

__all__ = ["EmbeddedStore"]
