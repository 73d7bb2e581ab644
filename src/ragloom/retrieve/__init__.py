"""Retrieval: dense, lexical and hybrid search, and the fusion functions behind hybrid."""
