"""The sections an ingest reads: ``ingest`` (with ``ingest.enrich``), and the derived structures built
after it, ``graph`` and ``raptor``."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..errors import RagloomWarning
from ..options import Section


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
