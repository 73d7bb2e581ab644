"""Derived knowledge structures beside the chunks: the entity graph and the RAPTOR tree.

Both live in the index's SQLite database (the embedded store's catalog, or the sidecar
catalog of the Chroma and Qdrant stores), keyed by chunk id and source path, and are
brought up to date by ``sync`` after every ingest or removal: a source whose content hash
differs from the one a structure was built from is stale, and only stale or removed
sources are touched. Nothing is ever rebuilt whole because one file changed.
"""
