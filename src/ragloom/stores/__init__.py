"""Stores: three role interfaces and a declaration of abilities (``base.py``), one module (or package) per backend."""

from .base import Abilities, AuditEntry, Candidate, Store, create_store

__all__ = ["Abilities", "AuditEntry", "Candidate", "Store", "create_store"]
