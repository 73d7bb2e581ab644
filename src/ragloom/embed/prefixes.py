"""Query and document prefixes that asymmetric embedding models were trained with.

Models such as bge, e5 and nomic-embed-text expect the query side (and some the
document side) to start with a fixed instruction; without it retrieval quality drops.
The rules match the model name wherever it is served from (Hugging Face id, Ollama
tag, local folder name). Cohere uses ``input_type`` instead and OpenAI models need none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

# (pattern on the lower-cased model name, query prefix, document prefix); first match wins.
# Names are matched at a word start (after "/", "-", "_" or the beginning), with "-" or "_".
_START = r"(?:^|[^a-z0-9])"
_RULES: list[tuple[str, str, str]] = [
    (_START + r"nomic[-_]embed[-_]text", "search_query: ", "search_document: "),
    (_START + r"e5[-_]", "query: ", "passage: "),
    (_START + r"bge[-_]m3", "", ""),  # bge-m3 was trained without instructions
    (_START + r"bge[-_]", BGE_QUERY_INSTRUCTION, ""),
    (_START + r"mxbai[-_]embed[-_]large", BGE_QUERY_INSTRUCTION, ""),
]


def model_prefixes(model: str) -> tuple[str, str]:
    """(query prefix, document prefix) that ``model`` wants; ("", "") when it wants none."""
    name = model.lower()
    for pattern, query, document in _RULES:
        if re.search(pattern, name):
            return query, document
    return "", ""


def resolve_prefixes(
    model: str, query_prefix: str | None, document_prefix: str | None, prompts: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Prefix per side: the configured one where given, else the model's own prompts
    (sentence-transformers' ``config_sentence_transformers.json``), else the known rules."""
    query, document = model_prefixes(model)
    prompts = prompts or {}
    query = prompts.get("query", query)
    document = prompts.get("document", prompts.get("passage", document))
    return {
        "query": query if query_prefix is None else query_prefix,
        "document": document if document_prefix is None else document_prefix,
    }
