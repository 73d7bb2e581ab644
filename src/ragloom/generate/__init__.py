"""Text generation: one small LLM interface (``base``), one module per provider (``llms``)."""

from .base import LLM, GenerationOptions, create_llm

__all__ = ["LLM", "GenerationOptions", "create_llm"]
