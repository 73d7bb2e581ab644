"""Scratch indexes for evaluation: one per (dataset, index-shaping settings), reused when unchanged.

The key covers only what changes the stored chunks and vectors (embedder, chunking,
store), so runs that differ in search settings or mode share one index. A BEIR corpus
is copied into shards of a few hundred documents first: ingest commits per source file,
so an interrupted build keeps the shards it finished and the next run resumes there.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ..config import Config, deep_merge
from ..index import Index, IngestProgress
from ..types import IngestReport, sha256_hex
from .beir import open_text

#: Documents per corpus shard: small enough that an interrupt loses little work.
DOCS_PER_SHARD = 500

#: Embedder settings that change speed but not the vectors; they stay out of the key.
_RUNTIME_ONLY = frozenset({"threads", "batch_size", "concurrency", "timeout", "max_retries", "retry_base_delay"})

_BUILD_FILE = "build.json"


def default_cache_dir() -> Path:
    """``$RAGLOOM_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragloom/eval``, else ``~/.cache/ragloom/eval``."""
    if os.environ.get("RAGLOOM_CACHE_DIR"):
        return Path(os.environ["RAGLOOM_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "ragloom" / "eval"


def index_key(source: Path, config: Config) -> str:
    embedder = {k: v for k, v in config.embedder.model_dump().items() if k not in _RUNTIME_ONLY}
    shape = {
        "source": str(source.resolve()),
        "embedder": embedder,
        "chunking": config.chunking.model_dump(),
        "store": config.store.model_dump(),
    }
    return sha256_hex(json.dumps(shape, sort_keys=True))[:12]


def scratch_dir(source: Path, config: Config, cache_dir: Path) -> Path:
    named = source.resolve()
    named = named.parent if named.is_file() else named  # a BEIR corpus is named after its folder
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", named.name).strip("-") or "dataset"
    return cache_dir / f"{slug}-{index_key(source, config)}"


def eval_config(config: Config, index_dir: Path) -> Config:
    """The run's config pointed at the scratch index: no audit log, and no cap on k,
    since document-level metrics need every chunk of the top documents."""
    overrides = {"index": str(index_dir), "audit": {"enabled": False}, "search": {"k_max": 1_000_000}}
    return Config.from_dict(deep_merge(config.model_dump(), overrides), "the eval settings")


@dataclass
class BuildInfo:
    """How a scratch index was built, and what this run had to do to bring it up to date."""

    path: str
    reused: bool
    seconds: float
    chunks_embedded: int
    tokens_embedded: int
    chunks: int = 0
    documents: int = 0
    build_seconds: float = 0.0
    build_embed_seconds: float = 0.0
    build_tokens: int = 0
    build_chunks: int = 0

    @property
    def tokens_per_second(self) -> float:
        """Embedding throughput of the build (tokens embedded / time spent embedding)."""
        return self.build_tokens / self.build_embed_seconds if self.build_embed_seconds else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "tokens_per_second": round(self.tokens_per_second, 1)}


def open_scratch_index(
    source: Path,
    config: Config,
    cache_dir: Path,
    progress: IngestProgress | None = None,
    *,
    shard_corpus: bool = False,
) -> tuple[Index, BuildInfo]:
    """Open (building or updating as needed) the scratch index of ``source`` for ``config``."""
    folder = scratch_dir(source, config, cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    documents = 0
    paths: list[Path] = [source]
    if shard_corpus:
        paths[0], documents = write_corpus_shards(source, folder / "corpus")
    index = Index.open(folder / "index", eval_config(config, folder / "index"))
    try:
        report = index.ingest(paths, progress=progress)
    except BaseException:
        index.close()
        raise
    info = _record_build(folder, report)
    info.chunks, info.documents = index.store.count(), documents
    return index, info


def _record_build(folder: Path, report: IngestReport) -> BuildInfo:
    """Add this run's work to the build totals kept next to the index (a resumed build sums up)."""
    file = folder / _BUILD_FILE
    totals = json.loads(file.read_text()) if file.is_file() else {}
    if report.chunks_embedded or report.added or report.updated or not totals:
        totals = {
            "build_seconds": totals.get("build_seconds", 0.0) + report.seconds,
            "build_embed_seconds": totals.get("build_embed_seconds", 0.0) + report.embed_seconds,
            "build_tokens": totals.get("build_tokens", 0) + report.tokens_embedded,
            "build_chunks": totals.get("build_chunks", 0) + report.chunks_embedded,
        }
        file.write_text(json.dumps(totals, indent=2))
    return BuildInfo(
        path=str(folder / "index"),
        reused=report.chunks_embedded == 0 and not report.added and not report.updated,
        seconds=report.seconds,
        chunks_embedded=report.chunks_embedded,
        tokens_embedded=report.tokens_embedded,
        **totals,
    )


def write_corpus_shards(corpus: Path, folder: Path, per_shard: int = DOCS_PER_SHARD) -> tuple[Path, int]:
    """Copy a JSONL corpus into ``folder/part-NNNNN.jsonl`` files; return the folder and the line count.

    A shard whose content is already there is not rewritten, so an unchanged corpus
    leaves every shard (and so every indexed source) untouched.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written: set[str] = set()
    lines: list[str] = []
    count = 0

    def flush() -> None:
        name = f"part-{len(written):05d}.jsonl"
        _write_if_changed(folder / name, "".join(lines))
        written.add(name)
        lines.clear()

    with open_text(corpus) as handle:
        for line in handle:
            if not line.strip():
                continue
            lines.append(line if line.endswith("\n") else line + "\n")
            count += 1
            if len(lines) == per_shard:
                flush()
    if lines:
        flush()
    for stale in folder.glob("part-*.jsonl"):
        if stale.name not in written:
            stale.unlink()
    return folder, count


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
