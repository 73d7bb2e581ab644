"""The sections that choose a component of a registry role: ``embedder``, ``llm``, ``chunking`` and
``store``. Their own settings hold for every component of the role; each component's options are its
own (``ComponentSection``), and a built-in's that every config carries (``store.chroma``) are added
from the registry (``with_builtin_options``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ..options import ComponentSection, with_builtin_options

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


@with_builtin_options
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


@with_builtin_options
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


@with_builtin_options
class StoreConfig(ComponentSection):
    config_key, component_role, chooser = "store", "store", "backend"

    backend: str = Field(
        "embedded",
        description="embedded (SQLite + exact vectors + tantivy BM25), chroma, qdrant or postgres (settings below)",
    )

    @model_validator(mode="before")
    @classmethod
    def _backend_shorthand(cls, data: Any) -> Any:
        return {"backend": data} if isinstance(data, str) else data  # store: chroma


@with_builtin_options
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
