"""Typed configuration: ``ragloom.yaml`` < ``RAGLOOM_*`` environment < explicit overrides.

Every model forbids unknown keys, and a misspelt key is reported with the valid ones
at that level, so a typo is never silently ignored.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError, UnknownConfigKeyError

CONFIG_FILENAME = "ragloom.yaml"
ENV_PREFIX = "RAGLOOM_"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


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


class EmbedderConfig(Section):
    provider: str = Field("onnx", description="embedder backend: onnx (packaged, offline) or a registered provider")
    model: str | None = Field(None, description="model name or path; None = the provider's default")
    batch_size: int = Field(32, ge=1, description="texts per embedding batch")
    threads: int = Field(0, ge=0, description="CPU threads for local models; 0 = all cores")
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


class ChunkingConfig(Section):
    strategy: str = Field("recursive", description="recursive | paragraph | sentence | markdown")
    chunk_size: int = Field(256, ge=16, description="target chunk size, in the embedder's tokens")
    chunk_overlap: int = Field(32, ge=0, description="tokens shared by neighbouring chunks (recursive)")
    sentence_splitter: Literal["punkt", "regex"] = Field("punkt", description="how sentences are found")
    by_extension: dict[str, str] = Field(
        default_factory=lambda: {".md": "markdown", ".markdown": "markdown"},
        description="strategy for files with these extensions, instead of strategy ({} to use strategy for all)",
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


class IngestConfig(Section):
    glob: list[str] = Field(default_factory=lambda: ["**/*"], description="which files of a folder to read")
    exclude: list[str] = Field(
        default_factory=lambda: [".git/**", "**/.git/**", ".ragloom/**", "**/.ragloom/**", "**/__pycache__/**"],
        description="files of a folder never read",
    )


class ChromaStoreConfig(Section):
    path: str | None = Field(
        None, description="persist directory of the embedded client; empty = <index>/chroma (ignored when host is set)"
    )
    host: str | None = Field(None, description="Chroma server host; set it to use the HTTP client instead of a directory")
    port: int = Field(8000, ge=1, le=65535, description="Chroma server port")
    ssl: bool = Field(False, description="use https to reach the Chroma server")
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers for the server (e.g. auth)")
    collection: str = Field("ragloom", description="collection holding the chunks (3-512 chars of [a-zA-Z0-9._-])")


class QdrantStoreConfig(Section):
    path: str | None = Field(
        None, description="folder for local mode (no server); empty = <index>/qdrant (ignored when url is set)"
    )
    url: str | None = Field(None, description="Qdrant server or cluster URL, e.g. http://localhost:6333")
    api_key: str | None = Field(None, description="API key for the server; empty = the QDRANT_API_KEY environment variable")
    collection: str = Field("ragloom", description="collection holding the chunks")
    prefer_grpc: bool = Field(False, description="talk gRPC (port 6334) instead of REST to the server")
    timeout: int = Field(60, ge=1, description="seconds to wait for the server on each request")


class StoreConfig(Section):
    backend: str = Field(
        "embedded",
        description="embedded (SQLite + exact vectors + tantivy BM25), chroma or qdrant (settings below)",
    )
    chroma: ChromaStoreConfig = Field(default_factory=ChromaStoreConfig)
    qdrant: QdrantStoreConfig = Field(default_factory=QdrantStoreConfig)


class SearchConfig(Section):
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
    fusion: Literal["convex", "rrf"] = Field("convex", description="how hybrid merges dense and BM25 rankings")
    alpha: float = Field(0.8, ge=0.0, le=1.0, description="convex fusion: weight of the dense score (tuned on SciFact train)")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")
    candidates: int = Field(100, ge=1, description="candidates taken from each retriever before fusion")
    k: int = Field(5, ge=1, description="results returned when k is not given")
    k_min: int = Field(1, ge=1, description="smallest k allowed; smaller values are clamped")
    k_max: int = Field(100, ge=1, description="largest k allowed; larger values are clamped")
    min_score: float | None = Field(None, description="drop hits scoring below this")

    @model_validator(mode="after")
    def _k_range(self) -> SearchConfig:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) is larger than k_max ({self.k_max})")
        return self


class AuditConfig(Section):
    enabled: bool = Field(True, description="write every search and its hits to the audit log")


class LLMConfig(Section):
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


class AnswerConfig(Section):
    strategy: str = Field(
        "auto", description="auto | extractive | standard | attributed | cove; auto = attributed when an LLM "
        "is available, else extractive (no LLM)"
    )
    k: int = Field(5, ge=1, description="passages retrieved for an answer")
    budget: int = Field(1500, ge=16, description="context budget in tokens (also the latency budget of a local LLM)")
    mode: str | None = Field(None, description="search preset used to retrieve for answers; None = search's own")
    max_tokens: int = Field(200, ge=8, description="longest generated answer, in tokens (a small model may "
                            "otherwise repeat itself up to llm.max_tokens)")
    extractive_sentences: int = Field(3, ge=1, description="extractive: most sentences in an answer")
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
    prompts: dict[str, str] = Field(
        default_factory=dict, description="override packaged prompt templates by name (system, standard, "
        "attributed, cove_questions, cove_answer, cove_revise, hyde, multi_query, rewrite)"
    )


class Config(Section):
    index: str = Field(".ragloom", description="directory that holds the index")
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    answer: AnswerConfig = Field(default_factory=AnswerConfig)

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
            data = _read_yaml(path)
            where = str(path)
            check_keys(cls, data, where)
        env_data = env_overrides(os.environ if env is None else env)
        check_keys(cls, env_data, "the environment (RAGLOOM_*)")
        merged = deep_merge(deep_merge(data, env_data), overrides or {})
        check_keys(cls, merged, "the overrides")
        return cls.from_dict(merged, where)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> Config:
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


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of settings, not {type(data).__name__}")
    return data


def check_keys(model: type[BaseModel], data: Any, where: str, prefix: str = "") -> None:
    """Raise UnknownConfigKeyError for the first key that ``model`` does not define."""
    if not isinstance(data, dict):
        return
    fields = model.model_fields
    for key, value in data.items():
        if key not in fields:
            raise UnknownConfigKeyError(prefix + str(key), where, fields)
        annotation = fields[key].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            check_keys(annotation, value, where, prefix=f"{prefix}{key}.")


def env_overrides(environ: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    """``RAGLOOM_SEARCH__MODE=dense`` becomes ``{"search": {"mode": "dense"}}``.

    Values are parsed as YAML scalars, so numbers, booleans and lists work.
    """
    out: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in _NON_CONFIG_ENV:
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


# Environment variables that ragloom reads for other purposes than config.
_NON_CONFIG_ENV = frozenset({"RAGLOOM_CONFIG", "RAGLOOM_MODEL_DIR", "RAGLOOM_LOG_LEVEL"})


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
        rendered = yaml.safe_dump(value, default_flow_style=True).strip()
        if rendered.endswith("\n..."):
            rendered = rendered[: -len("\n...")]
        rendered = rendered.removesuffix("\n...").strip()
        comment = f"  # {info.description}" if info.description else ""
        lines.append(f"{pad}{name}: {rendered}{comment}")
