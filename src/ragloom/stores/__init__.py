"""Stores: one interface, one module (or package) per backend."""

from .base import AuditEntry, Candidate, Store, create_store

__all__ = ["AuditEntry", "Candidate", "Store", "create_store"]
