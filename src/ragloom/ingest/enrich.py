"""Metadata derived from each chunk at ingest, by rules in ``ingest.enrich``.

- ``is_critical``: the chunk contains a marker word (``MANDATORY``, ``CRITICAL``),
  matched whole and case-sensitively, so ordinary prose ("a critical step") does not count;
- ``phase``: the number in a "Phase N" section header above the chunk (or in a
  Markdown header line inside it);
- front matter: a Markdown file's YAML front matter (``--- ... ---`` at the top) gives
  ``tags`` (a list) and its other scalar fields (``date`` as ISO text) to every chunk.

Fields the chunker sets (source, section, offsets, ...) are never overwritten. The
boosts stage and query filters read these fields; see ``retrieve/stages/boosts.py``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import yaml

from ..config import EnrichConfig
from ..types import Chunk, Document, sha256_hex

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_HEADER_LINE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
#: Set by the chunker; front matter may not replace them.
_RESERVED = frozenset({"source", "doc_id", "title", "section", "section_path", "chunk_index", "start", "end",
                       "token_count", "page", "page_end"})


def enrichment_policy(settings: EnrichConfig) -> str:
    """A suffix for the source's recorded policy when the rules differ from the defaults,
    so that changing them re-reads the files (their vectors come from the cache)."""
    if settings == EnrichConfig():
        return ""
    return "+enrich:" + sha256_hex(settings.model_dump_json())[:8]


def enrich_chunks(chunks: Sequence[Chunk], document: Document, settings: EnrichConfig) -> list[Chunk]:
    if not settings.enabled:
        return list(chunks)
    front = front_matter(document.text) if settings.front_matter else {}
    markers = _marker_pattern(settings.critical_markers)
    phase = re.compile(settings.phase_pattern, re.IGNORECASE) if settings.phase_pattern else None
    out = []
    for chunk in chunks:
        derived: dict[str, Any] = {key: value for key, value in front.items() if key not in _RESERVED}
        if markers is not None and markers.search(chunk.text):
            derived["is_critical"] = True
        if phase is not None:
            number = phase_of(chunk, phase)
            if number is not None:
                derived["phase"] = number
        derived = {key: value for key, value in derived.items() if key not in chunk.metadata or key in front}
        out.append(replace(chunk, metadata={**chunk.metadata, **derived}) if derived else chunk)
    return out


def phase_of(chunk: Chunk, pattern: re.Pattern[str]) -> int | None:
    """The phase number of the nearest header above or inside the chunk that names one."""
    headers = [str(h) for h in chunk.metadata.get("section_path") or []]
    headers += _HEADER_LINE.findall(chunk.text)[:1]
    for header in reversed(headers):
        match = pattern.search(header)
        if match and match.groups():
            try:
                return int(match.group(1))
            except ValueError:
                continue
    return None


def front_matter(text: str) -> dict[str, Any]:
    """Scalar fields and tags of a YAML front matter block; {} when there is none or it is not YAML."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    fields: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key)
        if key in ("tags", "keywords", "categories"):
            tags = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
            fields.setdefault("tags", [])
            fields["tags"] += [str(t).strip() for t in tags if str(t).strip()]
        elif isinstance(value, (dt.date, dt.datetime)):
            fields[key] = value.isoformat()
        elif isinstance(value, (str, int, float, bool)):
            fields[key] = value
    return fields


def _marker_pattern(markers: Sequence[str]) -> re.Pattern[str] | None:
    words = [re.escape(m) for m in markers if m]
    return re.compile(r"(?<!\w)(?:" + "|".join(words) + r")(?!\w)") if words else None
