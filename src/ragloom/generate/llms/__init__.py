"""LLM providers: llamacpp (local GGUF), ollama, openai (and compatible servers), cohere."""
