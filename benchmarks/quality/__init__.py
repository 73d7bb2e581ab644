"""Retrieval and answer quality: SciFact, the query pipeline, answers, conversations, knowledge structures."""
