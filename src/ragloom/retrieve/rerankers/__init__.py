"""Rerankers: reorder retrieved passages by a model's judgement of relevance."""
