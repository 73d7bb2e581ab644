"""Typed configuration: ``ragloom.yaml`` < ``RAGLOOM_*`` environment < explicit overrides.

``Config`` names the top-level sections, each declared in ``sections/`` by the part of ragloom that
reads it; a component's own options are declared beside the component (its ``Options``) and reach
the section that chooses it through the registry (``options.py``). This module puts them together,
loads them and writes them out (``ragloom init``).

Every model forbids unknown keys, and a misspelt key is reported with the valid ones
at that level, so a typo is never silently ignored.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError, UnknownConfigKeyError
from .options import ComponentSection, Section
# The sections, importable from here as ever (``from ragloom.config import SearchConfig``).
from .sections.components import (
    CODE_LANGUAGES, MARKDOWN_EXTENSIONS, ChunkingConfig, EmbedderConfig, LLMConfig, StoreConfig,
)
from .sections.ingest import EnrichConfig, GraphConfig, IngestConfig, RaptorConfig
from .sections.search import (
    AnswerConfig, AuditConfig, CacheConfig, FusionSettings, MatchRule, OperatorRule, SearchConfig, UnderstandConfig,
    overrides_of,
)
from .sections.serve import Duration, McpConfig, RemoteSourceConfig, ServerConfig, SourcesConfig, WatchConfig, seconds_of

__all__ = [
    "CODE_LANGUAGES", "CONFIG_FILENAME", "ENV_PREFIX", "MARKDOWN_EXTENSIONS", "NON_CONFIG_ENV", "AnswerConfig",
    "AuditConfig", "CacheConfig", "ChunkingConfig", "ComponentSection", "Config", "Duration", "EmbedderConfig",
    "EnrichConfig", "FusionSettings", "GraphConfig", "IngestConfig", "LLMConfig", "MatchRule", "McpConfig",
    "OperatorRule", "RaptorConfig", "RemoteSourceConfig", "SearchConfig", "Section", "ServerConfig", "SourcesConfig",
    "StoreConfig", "UnderstandConfig", "WatchConfig", "annotated_yaml", "check_keys", "deep_merge", "env_overrides",
    "expand_shorthands", "overrides_of", "parse_model_spec", "seconds_of",
]

CONFIG_FILENAME = "ragloom.yaml"
ENV_PREFIX = "RAGLOOM_"


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
