"""Embedders: one small base class, one module per provider."""

from .base import Embedder, create_embedder

__all__ = ["Embedder", "create_embedder"]
