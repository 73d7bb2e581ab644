"""Where the derived structures' tables live, and a small cache of model outputs.

The tables sit in the index's own database so that a source's graph rows and tree
leaves are removed in the same place its chunks are: the SQLite database of an embedded
index (or of a chroma/qdrant catalog), or the index's schema in PostgreSQL (the postgres
store, or a chroma/qdrant catalog there). ``tables(store)`` opens the right one; a store
with neither cannot hold the structures, and ``database`` says so.
"""

from __future__ import annotations

import sqlite3
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .tables_base import Rows, Tables
from .tables_postgres import PostgresTables
from .tables_sqlite import SqliteTables, sqlite_has_rows

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["Rows", "Tables", "database", "has_rows_in", "tables"]


def database(store: Store, feature: str = "the entity graph and the RAPTOR tree") -> Any:
    """Where the store keeps the structures (a SQLite connection or a PostgreSQL ``Database``),
    or a StoreError saying the backend cannot hold ``feature``."""
    home = store.structures_database()
    if home is None:
        raise StoreError(
            f"{feature} needs an index that keeps tables (the embedded and postgres stores, chroma and qdrant "
            f"with their catalog); the {store.name or type(store).__name__} store has none"
        )
    return home


#: Each open store's tables (and forgotten with the store).
_OPENED: weakref.WeakKeyDictionary[Store, Tables] = weakref.WeakKeyDictionary()


def tables(store: Store) -> Tables:
    """The structures' tables of this store (SQLite creates them on first use)."""
    if store not in _OPENED:
        home = database(store)
        _OPENED[store] = SqliteTables(home) if isinstance(home, sqlite3.Connection) else PostgresTables(home)
    return _OPENED[store]


def has_rows_in(store: Store, table: str) -> bool:
    """Whether the store's ``table`` exists and holds a row (no table is created)."""
    home = store.structures_database()
    if home is None:
        return False
    if isinstance(home, sqlite3.Connection):
        return sqlite_has_rows(home, table)
    return tables(store).has_rows(table)
