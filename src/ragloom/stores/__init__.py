"""Stores: three role interfaces and a declaration of abilities (``base.py``), one module (or package) per backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Abilities, AuditEntry, Candidate, Store, create_store

__all__ = ["Abilities", "AuditEntry", "Candidate", "Store", "create_store"]


def __getattr__(name: str) -> Any:
    # Imported when first asked for: reading the config imports the backends' options (the light
    # ``*options`` modules, through the registry) before ``base``, which imports the config, may be.
    if name in __all__:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
