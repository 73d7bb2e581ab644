"""Text generation: one small LLM interface (``base``), one module per provider (``llms``)."""

from ..models.llm import LLM, GenerationOptions, create_llm

__all__ = ["LLM", "GenerationOptions", "create_llm"]
