"""The models on their own: embedding throughput and memory, sessions, the local LLM, EmbeddingGemma."""
