"""Presets of the derived structures: each is hybrid search plus that structure, so that
``ragloom eval DATA --preset hybrid --preset graph --preset raptor`` compares them."""

from __future__ import annotations

from .pipeline import register_preset

register_preset("graph", [{"graph": {}}])
register_preset("graph-boost", [{"hybrid": {}}, {"graph-boost": {}}])
register_preset("raptor", [{"raptor": {}}])
