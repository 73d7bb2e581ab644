"""Typed configuration: ``ragloom.yaml`` < ``RAGLOOM_*`` environment < explicit overrides.

Every model forbids unknown keys, and a misspelt key is reported with the valid ones
at that level, so a typo is never silently ignored.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from . import registry
from .errors import ConfigError, RagloomWarning, UnknownConfigKeyError

CONFIG_FILENAME = "ragloom.yaml"
ENV_PREFIX = "RAGLOOM_"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ComponentSection(Section):
    """A section that chooses a component of a registry role (``store.backend``, ``embedder.provider``).

    Beside its own settings it takes a sub-section named after the chosen component, or after any
    plugin of the role, holding the options that component declares in its ``Options`` model:
    ``store: {backend: mystore, mystore: {url: ...}}``. A plugin's sub-section is checked by its
    model when the component is resolved (``options()``); a built-in's typed one (``store.chroma``)
    when the config is read. Any other key is an unknown setting, as in every section.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)
    #: The section's key in the config, the registry role it chooses from, and the field naming the choice.
    config_key: ClassVar[str]
    component_role: ClassVar[str]
    chooser: ClassVar[str]

    @classmethod
    def chosen(cls, data: Mapping[str, Any]) -> list[str]:
        """The components ``data`` (this section's raw settings) chooses."""
        name = data.get(cls.chooser, cls.model_fields[cls.chooser].default)
        return [name] if isinstance(name, str) else []

    @classmethod
    def option_keys(cls, data: Mapping[str, Any]) -> list[str]:
        """The sub-sections ``data`` may add besides the settings: one for each component it chooses
        (a plugin may be registered after the config is read) and each plugin's, chosen or not (a
        config may keep the options of several backends, as it keeps ``store.chroma`` and ``store.qdrant``)."""
        names = dict.fromkeys([*cls.chosen(data), *registry.plugin_names(cls.component_role)])
        return [name for name in names if name not in cls.model_fields]

    @model_validator(mode="after")
    def _only_component_sections(self) -> ComponentSection:
        if not self.model_extra:
            return self  # most configs: no plugin sections, and no need to list the plugins
        allowed = self.option_keys(vars(self))  # the fields' values (the extras are kept apart)
        for extra in self.model_extra:
            if extra not in allowed:
                valid = ", ".join(sorted([*type(self).model_fields, *allowed]))
                raise ValueError(f"unknown setting {extra!r}; valid keys here are: {valid}")
        return self

    def options(self, name: str | None = None) -> BaseModel | None:
        """The options of the component ``name`` (default: the chosen one), checked by its ``Options``
        model; None when it declares none. A misspelt or invalid option is a ConfigError naming it."""
        name = name or getattr(self, self.chooser)
        typed = getattr(self, name, None) if name in type(self).model_fields else None
        if isinstance(typed, BaseModel):
            return typed  # a built-in's own section, checked when the config was read
        model = registry.options_model(self.component_role, name)
        given = (self.model_extra or {}).get(name)
        where = f"{self.config_key}.{name}"
        if model is None:
            if given:
                raise ConfigError(f"{where}: the {self.component_role} {name!r} takes no options; remove that section")
            return None
        return registry.validate_options(model, given, f"{self.component_role} {name!r} ({where})")


# Connection settings shared by every section that talks to a model server.
BaseUrl = Annotated[
    str | None,
    Field(description="server URL; None = the provider's default or its environment variable "
          "(OLLAMA_HOST, OPENAI_BASE_URL); OpenAI-compatible URLs end in /v1"),
]
ApiKeyEnv = Annotated[
    str | None,
    Field(description="environment variable holding the API key; None = the provider's own "
          "(OPENAI_API_KEY, COHERE_API_KEY)"),
]
Timeout = Annotated[float, Field(gt=0, description="seconds to wait for one HTTP response")]
MaxRetries = Annotated[
    int, Field(ge=0, description="retries after the first attempt on 429, 5xx, timeouts and refused connections")
]
RetryBaseDelay = Annotated[
    float, Field(ge=0, description="seconds before the first retry; doubles each retry, with jitter")
]


class EmbedderConfig(ComponentSection):
    config_key, component_role, chooser = "embedder", "embedder", "provider"

    provider: str = Field("onnx", description="embedder backend: onnx (packaged, offline) or a registered provider")
    model: str | None = Field(None, description="model name or path; None = the provider's default")
    batch_size: int = Field(32, ge=1, description="texts per embedding batch")
    threads: int = Field(0, ge=0, description="CPU threads for local models; 0 = all cores")
    sessions: int = Field(
        0, ge=0, description="packaged ONNX models: sessions run side by side, sharing the threads; "
        "0 = one single-threaded session per thread (fastest, same vectors: BENCHMARKS.md)")
    max_tokens: int = Field(512, ge=8, description="longest input the model sees; longer text is truncated")
    base_url: BaseUrl = None
    api_key_env: ApiKeyEnv = None
    timeout: Timeout = 60.0
    max_retries: MaxRetries = 4
    retry_base_delay: RetryBaseDelay = 0.5
    concurrency: int | None = Field(
        None, ge=1, description="embedding requests in flight at once (HTTP providers); None = the provider's default"
    )
    dimensions: int | None = Field(
        None, ge=1,
        description="vector size: requested from APIs that can shorten vectors (OpenAI text-embedding-3, "
        "Cohere embed-v4) and checked against every response; None = whatever the model returns",
    )
    query_prefix: str | None = Field(
        None, description="text put before every query; None = the model's own (bge, e5, nomic, ...)"
    )
    document_prefix: str | None = Field(
        None, description="text put before every document chunk; None = the model's own"
    )


#: Files that are Markdown, or that their loader turns into Markdown (headings, lists, tables).
MARKDOWN_EXTENSIONS = (
    ".md", ".markdown", ".docx", ".odt", ".pptx", ".xlsx", ".xlsm", ".xls", ".ods", ".csv", ".tsv", ".epub", ".ipynb",
    ".eml", ".mbox", ".msg", ".html", ".htm", ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml",
    ".tex", ".adoc", ".asciidoc", ".org",
)


#: Source files by extension, and the language each is (``language`` in chunk metadata); their loader
#: (``code``) keeps the file's lines, and the ``code`` chunker cuts them by definition (tree-sitter).
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".scala": "scala", ".sc": "scala",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".sql": "sql", ".lua": "lua", ".r": "r",
}


class ChunkingConfig(ComponentSection):
    config_key, component_role, chooser = "chunking", "chunker", "strategy"

    strategy: str = Field("recursive", description="recursive | paragraph | sentence | markdown | semantic | agentic | proposition | code")
    chunk_size: int = Field(256, ge=16, description="target chunk size, in the embedder's tokens")
    chunk_overlap: int = Field(0, ge=0, description="tokens shared by neighbouring chunks (recursive); 0 measured best on SciFact train (BENCHMARKS.md)")
    sentence_splitter: Literal["punkt", "regex"] = Field("punkt", description="how sentences are found")
    semantic_percentile: float = Field(
        90.0, gt=0.0, lt=100.0, description="semantic: split where the distance between consecutive sentences "
        "is above this percentile of the document's distances")
    by_extension: dict[str, str] = Field(
        default_factory=lambda: {**dict.fromkeys(MARKDOWN_EXTENSIONS, "markdown"), **dict.fromkeys(CODE_LANGUAGES, "code")},
        description="strategy for files with these extensions, instead of strategy ({} to use strategy for all)",
    )

    @classmethod
    def chosen(cls, data: Mapping[str, Any]) -> list[str]:
        """The strategy, and those ``by_extension`` names: each may have its sub-section of options."""
        by_extension = data.get("by_extension")
        named = by_extension.values() if isinstance(by_extension, Mapping) else ()
        return list(dict.fromkeys([*super().chosen(data), *(name for name in named if isinstance(name, str))]))

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


class EnrichConfig(Section):
    """Metadata derived from each chunk at ingest, for filters and boosts (see ingest/enrich.py)."""

    enabled: bool = Field(True, description="derive is_critical, phase and front-matter fields at ingest")
    critical_markers: list[str] = Field(
        default_factory=lambda: ["MANDATORY", "CRITICAL"],
        description="words (matched whole and case-sensitively) that mark a chunk is_critical: true",
    )
    phase_pattern: str = Field(
        r"\bPhase\s+(\d+)\b", description="regex on the chunk's section headers; group 1 becomes phase (an integer)"
    )
    front_matter: bool = Field(
        True, description="copy scalar fields and tags of a Markdown file's YAML front matter to its chunks"
    )


#: Old names of ingest settings, still read (with a warning).
_RENAMED_INGEST = {"parse_in_worker": "read_in_worker", "parse_memory_mb": "max_file_memory_mb",
                   "parse_timeout_s": "max_file_seconds"}


class IngestConfig(Section):
    #: Old names still accepted (see ``_renamed_settings``).
    renamed_keys: ClassVar[dict[str, str]] = _RENAMED_INGEST

    glob: list[str] = Field(default_factory=lambda: ["**/*"], description="which files of a folder to read")
    exclude: list[str] = Field(
        default_factory=lambda: [".git/**", "**/.git/**", ".ragloom/**", "**/.ragloom/**", "**/__pycache__/**"],
        description="files of a folder never read",
    )
    ignore_files: list[str] = Field(
        default_factory=lambda: [".gitignore", ".ragloomignore"],
        description="files in a folder whose gitignore-style patterns name what the ingest leaves out there and below",
    )
    vendored: list[str] = Field(
        default_factory=lambda: ["node_modules", "vendor", "third_party", "bower_components", "site-packages",
                                 ".venv", "venv"],
        description="folders of other people's code, skipped (and named in the report) wherever they are found "
        "below an ingested folder; [] to read them",
    )
    max_file_mb: float = Field(
        100.0, gt=0, description="files larger than this many megabytes are skipped, with a message"
    )
    external_links: Literal["index", "skip"] = Field(
        "index", description="symlinks in a folder that point outside it: index (under the link's own path) or skip"
    )
    read_in_worker: bool = Field(
        True, description="read and chunk every file in a worker process under the budget below, so a file that "
        "blows up stops alone (Linux; elsewhere files are read in-process, without the budget)",
    )
    max_file_seconds: float = Field(
        300.0, gt=0, description="seconds the ingest waits for one file to be read and chunked (embedding not "
        "counted); a file taking longer is stopped, reported and skipped",
    )
    max_file_memory_mb: int = Field(
        512, ge=64, description="memory (MB) reading and chunking one file may take, counted afresh for each "
        "file; a file needing more is stopped, reported and skipped",
    )
    ocr: Literal["auto", "always", "never"] = Field(
        "auto", description="OCR (Tesseract) of PDF pages without a text layer and of images: auto, always "
        "(every PDF page) or never"
    )
    ocr_languages: str = Field("eng", description="Tesseract languages, e.g. eng or eng+deu (installed tessdata)")
    ocr_dpi: int = Field(200, ge=72, le=600, description="resolution PDF pages are rendered at for OCR")
    language: str = Field(
        "auto", pattern=r"^(auto|und|[a-z]{2,3}(-[A-Za-z0-9]+)?)$",
        description="each chunk's language (its lang metadata, which picks how BM25 reads it): auto = detected "
        "per chunk, or an ISO 639-1 code for every chunk, e.g. de",
    )
    enrich: EnrichConfig = Field(default_factory=EnrichConfig)

    @model_validator(mode="before")
    @classmethod
    def _renamed_settings(cls, data: Any) -> Any:
        """The settings of the parse sandbox became the file budget: their old names still work,
        with a warning that names the new ones."""
        if not isinstance(data, Mapping) or not any(old in data for old in _RENAMED_INGEST):
            return data
        data = dict(data)
        for old, new in _RENAMED_INGEST.items():
            if old not in data:
                continue
            value = data.pop(old)
            if new in data:
                raise ValueError(f"ingest.{old} is the old name of ingest.{new}, and both are set; keep ingest.{new}")
            data[new] = value
            warnings.warn(f"ingest.{old} is now ingest.{new} (it bounds reading and chunking every file); "
                          f"rename it in your settings", RagloomWarning, stacklevel=2)
        return data


class ChromaStoreConfig(Section):
    path: str | None = Field(
        None, description="persist directory of the embedded client; empty = <index>/chroma (ignored when host is set)"
    )
    host: str | None = Field(None, description="Chroma server host; set it to use the HTTP client instead of a directory")
    port: int = Field(8000, ge=1, le=65535, description="Chroma server port")
    ssl: bool = Field(False, description="use https to reach the Chroma server")
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers for the server (e.g. auth)")
    collection: str = Field("ragloom", description="collection holding the chunks (3-512 chars of [a-zA-Z0-9._-])")
    catalog: str | None = Field(
        None, description="postgresql://USER@HOST/DB?index=NAME: keep the sources registry, write journal, generation, "
        "audit chain, entity graph and RAPTOR tree in that database (shared by every replica) instead of "
        "<index>/chroma/ragloom.sqlite")


class QdrantStoreConfig(Section):
    path: str | None = Field(
        None, description="folder for local mode (no server); empty = <index>/qdrant (ignored when url is set)"
    )
    url: str | None = Field(None, description="Qdrant server or cluster URL, e.g. http://localhost:6333")
    api_key: str | None = Field(None, description="API key for the server; empty = the QDRANT_API_KEY environment variable")
    collection: str = Field("ragloom", description="collection holding the chunks")
    prefer_grpc: bool = Field(False, description="talk gRPC (port 6334) instead of REST to the server")
    timeout: int = Field(60, ge=1, description="seconds to wait for the server on each request")
    catalog: str | None = Field(
        None, description="postgresql://USER@HOST/DB?index=NAME: keep the sources registry, write journal, generation, "
        "audit chain, entity graph and RAPTOR tree in that database (shared by every replica) instead of "
        "<index>/qdrant/ragloom.sqlite")
    lexical: Literal["server", "local"] = Field(
        "server", description="where a new collection's BM25 lives: server = sparse vectors with Qdrant's IDF "
        "modifier (nothing kept on this disk), local = ragloom's tantivy index beside the collection; a collection "
        "keeps what it was created with")


class PostgresStoreConfig(Section):
    url: str | None = Field(
        None, description="libpq URL or conninfo of the database, e.g. postgresql://USER@HOST:5432/DB "
        "(postgresql://USER@/DB?host=/socket/dir for a unix socket); a query parameter index=NAME names the index",
    )
    index: str = Field("default", description="name of the index in the database (several live side by side)")
    language: str = Field(
        "ragloom", description="how BM25 reads text: ragloom (each chunk by its language's analyser, identifiers "
        "whole, as the embedded store, Qdrant and Chroma read it) or a PostgreSQL text search configuration "
        "(english, german, simple, ...); an index keeps what it was made with")
    pool_size: int = Field(
        8, ge=1, description="connections the store keeps open to the database (shared by the searches of one process)")
    exact_rows: int = Field(
        20_000, ge=0, description="an index of at most this many chunks is searched exactly (dense); above, through "
        "the approximate index (a filter is applied to what it finds, exact when too few pass)")
    bm25_depth: int = Field(
        1000, ge=1, description="BM25: postings read per query term, best first (at least 4 k); the chunks found are "
        "then scored exactly on every term")
    ann_index: Literal["ivfflat", "hnsw"] = Field(
        "ivfflat", description="pgvector's approximate index above exact_rows: ivfflat (sqrt(chunks) lists, rebuilt "
        "when the index has grown 4x) or hnsw")
    ivfflat_probes: int = Field(0, ge=0, description="IVFFlat lists searched per query; 0 = one in 32, at least 20")
    hnsw_m: int = Field(16, ge=2, le=100, description="HNSW graph degree (pgvector `m`)")
    hnsw_ef_construction: int = Field(64, ge=4, le=1000, description="HNSW build breadth (pgvector `ef_construction`)")
    hnsw_ef_search: int = Field(100, ge=1, le=1000, description="HNSW search breadth, raised for larger k")
    connect_timeout: int = Field(10, ge=1, description="seconds to wait for the database when connecting")


class AnnConfig(Section):
    threshold: int = Field(
        200_000, ge=1,
        description="chunks from which the embedded store searches an approximate index (faiss IVF, pip extra `ann`)",
    )
    nprobe: int = Field(0, ge=0, description="IVF lists searched per query; 0 = one in 16, at least 32")
    exact_rows: int = Field(20_000, ge=0, description="a filter leaving at most this many chunks is searched exactly")
    codec: Literal["SQ8", "Flat"] = Field(
        "SQ8", description="how the index keeps vectors: SQ8 (1 byte a number) or Flat; hits are rescored exactly"
    )


class EmbeddedStoreConfig(Section):
    ann: AnnConfig = Field(default_factory=AnnConfig)


class StoreConfig(ComponentSection):
    config_key, component_role, chooser = "store", "store", "backend"

    backend: str = Field(
        "embedded",
        description="embedded (SQLite + exact vectors + tantivy BM25), chroma, qdrant or postgres (settings below)",
    )
    embedded: EmbeddedStoreConfig = Field(default_factory=EmbeddedStoreConfig)
    chroma: ChromaStoreConfig = Field(default_factory=ChromaStoreConfig)
    qdrant: QdrantStoreConfig = Field(default_factory=QdrantStoreConfig)
    postgres: PostgresStoreConfig = Field(default_factory=PostgresStoreConfig)

    @model_validator(mode="before")
    @classmethod
    def _backend_shorthand(cls, data: Any) -> Any:
        return expand_shorthands({"store": data})["store"]


class MatchRule(Section):
    """A query understanding rule: where ``pattern`` matches the query, ``field`` = group 1."""

    pattern: str = Field(description="regex, case-insensitive; group 1 is the value")
    field: str = Field(description="metadata field the value is compared with")
    action: Literal["filter", "boost", "off"] = Field("boost", description="filter: only matching chunks; "
                                                      "boost: matching chunks score higher (boosts stage)")
    value_type: Literal["int", "float", "str"] = Field("str", description="how the captured text is read")
    weight: float = Field(0.1, description="boost added to a matching chunk's normalised score")
    strip: bool = Field(False, description="remove the matched words from the text retrievers see")


class OperatorRule(Section):
    """``name:value`` in a query becomes a filter on ``field``."""

    field: str = Field(description="metadata field filtered on")
    op: Literal["$eq", "$gt", "$gte", "$lt", "$lte", "source"] = Field(
        "$eq", description="comparison; source: the value names a file (path suffix or glob)"
    )
    value_type: Literal["str", "int", "date"] = Field("str", description="date: YYYY, YYYY-MM or YYYY-MM-DD")


class UnderstandConfig(Section):
    enabled: bool = Field(True, description="turn operators, quoted phrases and rules in the query into the plan")
    rules: list[MatchRule] = Field(
        default_factory=lambda: [MatchRule(pattern=r"\bphase\s+(\d+)\b", field="phase", value_type="int")],
        description="pattern rules; the default boosts chunks whose phase matches 'phase N'",
    )
    operators: dict[str, OperatorRule] = Field(
        default_factory=lambda: {
            "source": OperatorRule(field="source", op="source"),
            "tag": OperatorRule(field="tags"),
            "after": OperatorRule(field="date", op="$gte", value_type="date"),
            "before": OperatorRule(field="date", op="$lt", value_type="date"),
        },
        description="name:value operators and the filter each becomes",
    )
    phrases: bool = Field(True, description='"quoted phrase": hits holding it rank first; +"phrase": must appear in every hit')
    pasted_words: int = Field(
        40, ge=1, description="a query of more words than this is a pasted text (a paragraph, a request): "
        "its quotes and operators are read as words, not as phrases and filters"
    )
    identifier_alpha: float | None = Field(
        0.5, ge=0.0, le=1.0,
        description="dense weight of hybrid search for identifier-like queries (snake_case, CamelCase, "
        "error codes); None = leave it",
    )
    identifiers: bool = Field(
        True, description="tokens of a query written like identifiers (a UUID, hash, version, error code, file "
        "name, snake_case, camelCase or dotted.name) are looked up exactly: the chunks holding them rank first",
    )
    symbols: bool = Field(
        True, description="a query that names a symbol (Class.method, snake_case, 'class Style', 'fn main') puts "
        "its definition first: exact name, then ignoring case and separators, then by prefix (code chunks only)",
    )
    pasted: bool = Field(
        True, description="a query of 4+ words not wholly quoted is also looked for as written (quotes and "
        "punctuation in it are text): the passages holding it rank first; a pasted traceback is searched by its "
        "exception's message",
    )
    identifier_patterns: list[str] = Field(
        default_factory=lambda: [
            r"^\S*[a-z0-9]_[a-z0-9]\S*$", r"^\S*[a-z][A-Z]\S*$", r"^[A-Z][A-Z0-9]*[-_]?\d{2,}$",
            r"^\S+\.\S+\(\)?$", r"^[A-Z][A-Z0-9_]{3,}$",
        ],
        description="regexes; a query whose every word matches one of them is an identifier",
    )


class CacheConfig(Section):
    size: int = Field(256, ge=0, description="recent search results kept (0 disables the result cache)")
    embeddings: int = Field(1024, ge=0, description="recent query embeddings kept (0 disables)")


class FusionSettings(Section):
    """How hybrid search fuses dense and BM25 candidates: these settings are declared here only.

    The ``search`` section holds their defaults; a hybrid step's options (``{hybrid: {alpha: 0.5}}``)
    override any of them for that step (see ``overrides_of``).
    """

    fusion: Literal["convex", "rrf"] = Field("convex", description="how hybrid merges dense and BM25 rankings")
    alpha: float = Field(0.8, ge=0.0, le=1.0, description="convex fusion: weight of the dense score (tuned on SciFact train)")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")
    candidates: int = Field(100, ge=1, description="candidates taken from each retriever before fusion")


def overrides_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s fields, each made optional with the default None (unset = keep the default),
    as ``pydantic.create_model`` takes them: a step's options that override a config section."""
    from pydantic.fields import FieldInfo

    return {name: (info.annotation | None, FieldInfo.merge_field_infos(info, default=None))
            for name, info in model.model_fields.items()}


class SearchConfig(FusionSettings):
    mode: str = Field(
        "hybrid", description="default search preset: dense, lexical, hybrid, or another preset "
        "(built-in or under presets); ignored when pipeline is set"
    )
    pipeline: list[str | dict[str, Any]] | None = Field(
        None, description="explicit steps, a retriever then stages, e.g. [{hybrid: {}}, {mmr: {lambda: 0.7}}]; "
        "None = the steps of the mode's preset"
    )
    presets: dict[str, list[str | dict[str, Any]]] = Field(
        default_factory=dict, description="your own named pipelines, usable wherever a preset name is"
    )
    k: int = Field(5, ge=1, description="results returned when k is not given")
    k_min: int = Field(1, ge=1, description="smallest k allowed; smaller values are clamped")
    k_max: int = Field(100, ge=1, description="largest k allowed; larger values are clamped")
    min_score: float | None = Field(None, description="drop hits scoring below this")
    weak_cosine: float = Field(
        0.65, ge=-1.0, le=1.0, description="a hit whose dense cosine similarity (its relevance when no rerank "
        "step scored it) is below this is marked weak; a reranked hit is weak below answer.unanswerable_below, "
        "the cross-encoder probability under which ask says the sources do not say. Calibrated on SciFact "
        "(BENCHMARKS.md \"Relevance across queries\")"
    )
    max_query_chars: int = Field(
        16_000, ge=1, description="longest query searched, from the CLI, the Python API and the servers "
        "(which also apply server.max_query_chars); a pasted page is a query: the embedder reads its first "
        "512 tokens, BM25 its first 1,024 distinct terms, the cross-encoder its first half window"
    )
    fallback: Literal["grep", "none"] = Field(
        "grep", description="when the embedder fails or nothing scores above min_score: literal search of the "
        "stored chunk texts (hits marked retrieval=grep), or none (raise / return nothing)"
    )
    understand: UnderstandConfig = Field(default_factory=UnderstandConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)

    @model_validator(mode="after")
    def _k_range(self) -> SearchConfig:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) is larger than k_max ({self.k_max})")
        return self


class AuditConfig(Section):
    enabled: bool = Field(True, description="write every search and its hits to the audit log")


class LLMConfig(ComponentSection):
    config_key, component_role, chooser = "llm", "llm", "provider"

    provider: str = Field(
        "llamacpp", description="text generator: llamacpp (local GGUF, offline), ollama, openai, cohere"
    )
    model: str | None = Field(
        None, description="model name; for llamacpp a .gguf path or qwen2.5-coder-0.5b | qwen2.5-coder-1.5b | "
        "smollm2 (tests only); None = the provider's default (llamacpp: qwen2.5-coder-0.5b, scripts/setup.sh --llm)"
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature; 0 = most likely tokens")
    max_tokens: int = Field(512, ge=1, description="longest answer generated, in tokens")
    threads: int = Field(
        0, ge=0, description="CPU threads of a local model; 0 = all cores (fastest on an idle machine; on a busy "
        "one set 1: 2 threads ran ~8x slower under load, BENCHMARKS.md)"
    )
    context_size: int = Field(4096, ge=256, description="context window of a local model, in tokens")
    seed: int = Field(0, description="random seed of a local model, so answers repeat")
    base_url: BaseUrl = None
    api_key_env: ApiKeyEnv = None
    timeout: Timeout = 120.0
    max_retries: MaxRetries = 4
    retry_base_delay: RetryBaseDelay = 0.5


class McpConfig(Section):
    ingest: bool = Field(False, description="offer the ingest tool to MCP clients (paths must be inside server.allowed_roots)")


class ServerConfig(Section):
    host: str = Field("127.0.0.1", description="address `ragloom serve` listens on; 0.0.0.0 exposes it to the network")
    port: int = Field(8000, ge=1, le=65535, description="port `ragloom serve` listens on")
    api_key: str | None = Field(
        None, description="key that writes (ingest, delete) must send; None = the RAGLOOM_API_KEY environment "
        "variable; with neither, writes are refused",
    )
    require_key_for_reads: bool = Field(False, description="ask for the API key on searches and listings too")
    job_lease: float = Field(
        30.0, gt=0, description="seconds an ingest job kept in a shared store (postgres) stays with its replica without "
        "a sign of life; then another replica takes it over")
    allowed_roots: list[str] = Field(
        default_factory=list, description="folders whose files POST /v1/ingest and the MCP ingest tool may read by path; "
        "empty = ingest by path is refused (uploads still work)",
    )
    upload_dir: str | None = Field(None, description="where uploaded files are kept; None = <index>/uploads")
    max_upload_bytes: int = Field(50_000_000, ge=1, description="largest uploaded file")
    max_body_bytes: int = Field(100_000_000, ge=1, description="largest request body")
    max_query_chars: int = Field(16_000, ge=1, description="longest query accepted")
    cors_origins: list[str] = Field(default_factory=list, description="origins allowed by CORS; empty = CORS off")
    search_threads: int = Field(4, ge=1, description="searches served at once, each with its own store connection")
    indexes: dict[str, str] = Field(
        default_factory=dict, description="name -> index folder, to serve several indexes (the first is the default, "
        "served at /v1/...; each at /v1/indexes/{name}/...); empty = the one index of `index`",
    )
    mcp: McpConfig = Field(default_factory=McpConfig)


class WatchConfig(Section):
    debounce_ms: int = Field(1600, ge=1, description="changes arriving within this window are ingested together")


class AnswerConfig(Section):
    strategy: str = Field(
        "auto", description="auto | extractive | standard | attributed | cove; auto = attributed when an LLM "
        "is available, else extractive (no LLM); the packaged qwen2.5-coder models measured below extractive, so "
        "auto answers extractively with them"
    )
    k: int = Field(5, ge=1, description="passages retrieved for an answer")
    budget: int = Field(1500, ge=16, description="context budget in tokens (also the latency budget of a local LLM)")
    mode: str | None = Field(None, description="search preset used to retrieve for answers; None = search's own")
    max_tokens: int = Field(200, ge=8, description="longest generated answer, in tokens (a small model may "
                            "otherwise repeat itself up to llm.max_tokens)")
    extractive_sentences: int = Field(3, ge=1, description="extractive: most sentences in an answer")
    extractive_min_relevance: float = Field(
        0.03, ge=0.0, le=1.0, description="extractive: cross-encoder probability (0..1) the best sentence needs; "
        "below it the answer is 'The sources do not say.' Tuned on SQuAD-train train questions, each also asked "
        "of its own article without its paragraph and of another article (benchmarks/quality/extractive_floor.py)"
    )
    extractive_followup_min_relevance: float = Field(
        0.3, ge=0.0, le=1.0, description="extractive: a follow-up the question alone does not clear the floor for is "
        "answered when the question read after the previous one has a sentence this probable; tuned on the tune half "
        "of convqa-dev's follow-ups, answerable and unanswerable (BENCHMARKS.md)"
    )
    unanswerable_below: float = Field(
        0.02, ge=0.0, le=1.0, description="cross-encoder relevance of the best passage (0..1) below which the "
        "answer is 'The sources do not say.' without asking the LLM"
    )
    support_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="attributed: support score below which a sentence is flagged unsupported"
    )
    support_checker: Literal["cross-encoder", "embedding", "overlap"] = Field(
        "cross-encoder", description="how a sentence-passage pair is checked for support"
    )
    verification_questions: int = Field(3, ge=1, le=10, description="cove: verification questions asked")
    followup: Literal["offline", "llm", "none"] = Field(
        "offline", description="how a follow-up question is made standalone before it is searched: offline (carry "
        "the conversation's salient terms, no LLM; measured best on convqa-dev), llm (answer.prompts.followup), none"
    )
    history_tokens: int = Field(
        1000, ge=0, description="most tokens of earlier turns a conversation keeps; the oldest turns are dropped first"
    )
    prompts: dict[str, str] = Field(
        default_factory=dict, description="override packaged prompt templates by name (system, standard, "
        "attributed, cove_questions, cove_answer, cove_revise, hyde, multi_query, rewrite, followup)"
    )


class GraphConfig(Section):
    enabled: bool = Field(False, description="build the entity graph at ingest (retriever graph, stage graph-boost)")
    extractor: Literal["spacy", "llm"] = Field(
        "spacy", description="spacy: NER (en_core_web_sm) plus co-occurrence relations, offline and fast; "
        "llm: entities and relations in JSON from the llm section's model")
    entity_types: list[str] = Field(
        default_factory=lambda: ["PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "WORK_OF_ART",
                                 "PRODUCT", "LAW", "LANGUAGE"],
        description="spaCy entity labels kept (numbers, dates and amounts make poor graph nodes)")
    max_entities_per_chunk: int = Field(25, ge=1, description="entities kept per chunk, most mentioned first")
    window: int = Field(400, ge=1, description="spacy: two entities within this many characters are related")
    aliases: dict[str, str] = Field(
        default_factory=dict, description="alias -> canonical name, merged into one entity (e.g. USA: United States)")
    communities: bool = Field(False, description="also detect communities (Louvain) and summarise them")


class RaptorConfig(Section):
    enabled: bool = Field(False, description="build the RAPTOR tree of cluster summaries at ingest (retriever raptor)")
    summarizer: Literal["extractive", "llm"] = Field(
        "extractive", description="extractive: the sentences nearest the cluster centre, no LLM; "
        "llm: a summary written by the llm section's model")
    max_levels: int = Field(3, ge=1, le=8, description="summary levels above the chunks at most")
    stop_below: int = Field(8, ge=2, description="stop when a level has this few nodes or fewer")
    max_clusters: int = Field(64, ge=2, description="largest number of clusters tried per level (BIC picks)")
    cluster_size: int = Field(
        12, ge=2, description="average members per cluster at most: a level of n nodes gets at least "
        "n / cluster_size clusters, even above max_clusters")
    threshold: float = Field(
        0.3, gt=0.0, le=1.0, description="soft assignment: a node joins every cluster it belongs to with "
        "this probability or more")
    umap: bool = Field(False, description="reduce dimensions with UMAP before clustering (needs umap-learn)")
    summary_sentences: int = Field(4, ge=1, description="extractive: sentences per summary")
    summary_tokens: int = Field(200, ge=16, description="llm: longest summary, in tokens")
    seed: int = Field(0, description="random seed of the clustering, so trees repeat")
    rebuild_after: float = Field(
        1.0, ge=0.0, description="re-cluster the whole tree at ingest once the chunks that came or went since the "
        "last full build exceed this share of the chunks it was built on (0 = only `ragloom raptor rebuild`)")


def seconds_of(value: Any) -> Any:
    """``90``, ``"90s"``, ``"15m"``, ``"2h"``, ``"1d"`` -> seconds (a float); anything else as given."""
    if isinstance(value, str):
        text = value.strip().lower()
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        try:
            return float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a duration; write seconds (90) or 90s, 15m, 2h, 1d") from None
    return value


#: Seconds, also written 90s, 15m, 2h or 1d.
Duration = Annotated[float, BeforeValidator(seconds_of), Field(gt=0)]


class RemoteSourceConfig(Section):
    """One remote source synced into the index (README "Remote sources")."""

    uri: str = Field(description="s3://BUCKET/PREFIX, https://HOST/PATH (or its sitemap.xml), git+https://HOST/REPO@REF, "
                     "git+file:///PATH@REF, imaps://USER@HOST/MAILBOX")
    interval: Duration | None = Field(
        None, description="sync it this often under `ragloom serve` (seconds, or 30s, 15m, 2h, 1d); None = "
        "sources.interval")
    include: list[str] = Field(default_factory=list, description="only items whose key or path matches one of these "
                               "globs (e.g. docs/**/*.md); empty = every item of a supported type")
    exclude: list[str] = Field(default_factory=list, description="leave out items whose key or path matches one of these")
    max_pages: int | None = Field(None, ge=1, description="web: most pages read per sync; None = sources.max_pages")
    max_depth: int | None = Field(None, ge=0, description="web: most links followed from the start page; None = "
                                  "sources.max_depth")
    token_env: str | None = Field(None, description="environment variable holding a token sent as credentials "
                                  "(web: Authorization: Bearer; git over https: as the password; imaps: the password)")
    token_file: str | None = Field(None, description="a file holding that token (read at each sync, never stored)")
    username: str | None = Field(None, description="git or web over https: the user the token is sent for (Basic "
                                 "authentication); None = the token as a Bearer token")


class SourcesConfig(Section):
    """Remote sources: how they are fetched, which may be, and those synced on a schedule."""

    remote: dict[str, RemoteSourceConfig] = Field(
        default_factory=dict, description="name -> source synced by `ragloom sync [NAME]` and, with an interval, by "
        "`ragloom serve`")
    interval: Duration = Field(300.0, description="how often `ragloom serve` syncs a source that names no interval")
    allow_private_hosts: bool = Field(
        False, description="let the crawler and git reach private, loopback and link-local addresses (refused by "
        "default: a URL must not reach the machine's own network)")
    allowed: list[str] = Field(
        default_factory=list, description="what POST /v1/ingest may fetch by URI: hosts (docs.example.com), buckets "
        "(s3://bucket) and repositories' hosts (git+https://git.example.com); empty = remote URIs refused there")
    max_item_mb: float = Field(25.0, gt=0, description="largest object, page or file downloaded (streamed, and "
                               "refused past it); ingest.max_file_mb still applies")
    max_pages: int = Field(1000, ge=1, description="web: most pages read per sync")
    max_depth: int = Field(5, ge=0, description="web: most links followed from the start page")
    max_sync_mb: float = Field(2000.0, gt=0, description="most bytes downloaded by one sync of one source")
    timeout: float = Field(30.0, gt=0, description="seconds to wait for one response (connect, and each read)")
    batch_items: int = Field(200, ge=1, description="items fetched, then ingested and their cursors committed, at a "
                             "time: an interrupted sync keeps every batch it finished")
    user_agent: str = Field("ragloom (+https://pypi.org/project/ragloom/)", description="the crawler's User-Agent, "
                            "also matched against robots.txt")


class Config(Section):
    index: str = Field(".ragloom", description="directory that holds the index")
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    watch: WatchConfig = Field(default_factory=WatchConfig)
    answer: AnswerConfig = Field(default_factory=AnswerConfig)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    raptor: RaptorConfig = Field(default_factory=RaptorConfig)
    sources: SourcesConfig = Field(default_factory=SourcesConfig)

    @classmethod
    def load(
        cls,
        file: str | Path | None = None,
        *,
        env: dict[str, str] | None = None,
        overrides: dict[str, Any] | None = None,
    ) -> Config:
        """Read ``file`` (or ``./ragloom.yaml`` if present), then env, then overrides."""
        data: dict[str, Any] = {}
        where = "defaults"
        path = Path(file) if file is not None else Path(CONFIG_FILENAME)
        if file is not None and not path.exists():
            raise ConfigError(f"config file {path} does not exist; create one with `ragloom init`")
        if path.exists():
            data = expand_shorthands(_read_yaml(path))
            where = str(path)
        env_data = expand_shorthands(env_overrides(os.environ if env is None else env))
        merged = deep_merge(deep_merge(data, env_data), expand_shorthands(overrides or {}))
        # Each source is checked apart, to name it; which plugin sections may appear depends on
        # the choice the sources make together (a backend in the file, its options in RAGLOOM_*).
        check_keys(cls, data, where, merged=merged)
        check_keys(cls, env_data, "the environment (RAGLOOM_*)", merged=merged)
        check_keys(cls, merged, "the overrides")
        return cls.from_dict(merged, where)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> Config:
        data = expand_shorthands(data)
        check_keys(cls, data, where)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc, where)) from None


def parse_model_spec(spec: str) -> tuple[str, str | None]:
    """``"ollama:nomic-embed-text"`` -> ``("ollama", "nomic-embed-text")``; ``"onnx"`` -> ``("onnx", None)``.

    Only the first colon separates provider from model, so Ollama tags
    (``ollama:nomic-embed-text:latest``) and Windows paths survive.
    """
    provider, _, model = spec.strip().partition(":")
    if not provider:
        raise ConfigError(f"{spec!r} names no provider; write PROVIDER or PROVIDER:MODEL, e.g. ollama:nomic-embed-text")
    return provider, model or None


def expand_shorthands(data: Any) -> Any:
    """``store: chroma`` means ``store: {backend: chroma}``."""
    if isinstance(data, dict) and isinstance(data.get("store"), str):
        return {**data, "store": {"backend": data["store"]}}
    return data


def _read_yaml(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise ConfigError(f"{path} is a folder, not a config file; pass a YAML file such as {path / CONFIG_FILENAME}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start:exc.start + 1]!r}); "
            "save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_problem(path, exc)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of settings, not {type(data).__name__}")
    return data


def _yaml_problem(path: Path, exc: yaml.YAMLError) -> str:
    """One line: ``file:line:column: what is wrong``."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    detail = f"{problem} ({context})" if context else problem
    return f"{where}: invalid YAML: {' '.join(str(detail).split())}"


def check_keys(
    model: type[BaseModel], data: Any, where: str, prefix: str = "", merged: Any = None
) -> None:
    """Raise UnknownConfigKeyError for the first key that ``model`` does not define. A
    ``ComponentSection`` may also hold a sub-section for each component it chooses (in ``merged``,
    the settings ``data`` is part of, when given), which is checked when the component is resolved."""
    if not isinstance(data, dict):
        return
    merged = merged if isinstance(merged, dict) else data
    fields = model.model_fields
    for key, value in data.items():
        if key in getattr(model, "renamed_keys", {}):
            continue  # an old name the model reads (and warns about)
        if key not in fields:
            plugin_keys = model.option_keys(merged) if issubclass(model, ComponentSection) else []
            if key in plugin_keys:
                continue
            raise UnknownConfigKeyError(prefix + str(key), where, [*fields, *plugin_keys])
        annotation = fields[key].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            check_keys(annotation, value, where, prefix=f"{prefix}{key}.", merged=merged.get(key))


def env_overrides(environ: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    """``RAGLOOM_SEARCH__MODE=dense`` becomes ``{"search": {"mode": "dense"}}``.

    Values are parsed as YAML scalars, so numbers, booleans and lists work.
    """
    out: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in NON_CONFIG_ENV:
            continue
        path = name[len(ENV_PREFIX):].lower().split("__")
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        try:
            node[path[-1]] = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError:
            node[path[-1]] = raw
    return out


# Environment variables that ragloom (or its setup and demo scripts) reads for other purposes
# than config; tests/integration/test_hardening_io.py checks that every RAGLOOM_* name the
# project mentions is either here or a setting.
NON_CONFIG_ENV = frozenset({
    "RAGLOOM_CONFIG", "RAGLOOM_MCP_KEY", "RAGLOOM_MODEL_DIR", "RAGLOOM_LOG_LEVEL", "RAGLOOM_CACHE_DIR", "RAGLOOM_TORCH_INDEX",
    "RAGLOOM_VENV", "RAGLOOM_DEMO_INDEX", "RAGLOOM_DEBUG", "RAGLOOM_API_KEY", "RAGLOOM_DATASETS",
    "RAGLOOM_MODEL_DOWNLOAD",
})


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _explain(exc: ValidationError, where: str) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(top level)"
        problems.append(f"{loc}: {err['msg']} (got {err.get('input')!r})")
    return f"invalid settings in {where}: " + "; ".join(problems)


def annotated_yaml(config: Config | None = None) -> str:
    """ragloom.yaml with every setting, its value and a comment saying what it does."""
    config = config or Config()
    lines = ["# ragloom configuration. Every setting is shown with its default.",
             "# Environment variables override it: RAGLOOM_SECTION__KEY=value (e.g. RAGLOOM_SEARCH__MODE=dense).", ""]
    _emit(config, lines, indent=0)
    return "\n".join(lines) + "\n"


def _emit(model: BaseModel, lines: list[str], indent: int) -> None:
    pad = "  " * indent
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            lines.append(f"{pad}{name}:")
            _emit(value, lines, indent + 1)
            if indent == 0:
                lines.append("")
            continue
        if isinstance(value, (list, dict)):  # may hold models (search.understand.rules)
            value = model.model_dump(mode="json", include={name})[name]
        rendered = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        if rendered.endswith("\n..."):
            rendered = rendered[: -len("\n...")]
        rendered = rendered.removesuffix("\n...").strip()
        comment = f"  # {info.description}" if info.description else ""
        lines.append(f"{pad}{name}: {rendered}{comment}")
