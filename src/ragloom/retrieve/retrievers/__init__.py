"""Retrievers: a plan in, ranked candidates out. One module per technique."""

from ..pipeline import register_preset

# Presets of the LLM-backed techniques; off by default (measured in benchmarks/answers.py).
register_preset("corrective", [{"corrective": {}}, {"compress": {}}])
register_preset("hyde", [{"hyde": {}}])
register_preset("multi-query", [{"multi-query": {}}])
