"""Retrieval: dense, lexical and hybrid search, and the fusion functions behind hybrid."""
from . import knowledge_presets as _knowledge_presets  # noqa: F401 - registers the graph and raptor presets
