"""Each chunk's language, as ``lang`` metadata: detected (``ingest.language: auto``) or set.

The language picks the chunk's BM25 analyser (``lang/analysis.py``); it is a metadata field
like any other, so searches filter on it (``--where lang=de``) and ``status`` counts it.
A ``lang`` the loader or the front matter gave is kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..embed.multilingual import ENGLISH_MODEL_ID, MODEL_ID
from ..lang import UNDETERMINED, detect_language
from ..types import Chunk
from .loaders import LoaderOptions, LoadResult, load_file

AUTO = "auto"


#: Of a chunk, the characters its language is judged on (the detector's cost grows with them; a
#: chunk's first few sentences say its language as well as all of them).
DETECT_CHARS = 600


def with_languages(chunks: Sequence[Chunk], setting: str = AUTO) -> list[Chunk]:
    """``chunks`` with ``lang`` set: ``setting`` when it names a language, else each chunk's own."""
    out = []
    judged: dict[str, str] = {}  # the same text (a repeated boilerplate chunk) is judged once
    for chunk in chunks:
        if "lang" in chunk.metadata:
            out.append(chunk)
            continue
        if setting == AUTO:
            sample = chunk.text[:DETECT_CHARS]
            language = judged.get(sample) or judged.setdefault(sample, detect_language(sample)[0])
        else:
            language = setting
        out.append(replace(chunk, metadata={**chunk.metadata, "lang": language or UNDETERMINED}))
    return out


def language_policy(setting: str) -> str:
    """A suffix for the source's recorded policy when the language is set, not detected, so that
    changing it re-reads the files (their vectors come from the cache)."""
    return "" if setting == AUTO else f"+lang:{setting}"


#: How much of the first files the language of a new index is judged on.
SAMPLE_FILES = 8
SAMPLE_DOCUMENTS = 64
SAMPLE_CHARS = 1500


def sample_texts(plan: Sequence[Path], options: LoaderOptions,
                 read: Callable[[Path], list[str]] | None = None) -> list[str]:
    """Texts from the first files of an ingest plan (unreadable files are left out); ``read`` gives
    a file's ``first_texts`` as the ingest reads it (in its worker, within the file budget), by
    default in this process."""
    texts: list[str] = []
    for file in plan[:SAMPLE_FILES]:
        if not Path(file).is_file():  # a pipe, a device, a loop: never opened here (the ingest reports it)
            continue
        try:
            texts += read(file) if read is not None else first_texts(load_file(file, str(file), None, options))
        except Exception:  # noqa: BLE001 - the ingest itself reports this file
            continue
        if len(texts) >= SAMPLE_DOCUMENTS:
            break
    return texts


def first_texts(result: LoadResult) -> list[str]:
    """The start of each of the first documents of a file: what its language is judged on."""
    return [document.text[:SAMPLE_CHARS] for document in result.documents[:SAMPLE_DOCUMENTS]]


def english_only_notice(model_id: str, characters: Mapping[str, int]) -> str | None:
    """One line when an index that embeds with the English model receives mostly other languages
    (``characters``: how many characters of the ingested chunks each language has), else None."""
    known = {code: n for code, n in characters.items() if code != UNDETERMINED}
    total = sum(known.values())
    if model_id != ENGLISH_MODEL_ID or not total or known.get("en", 0) / total >= 0.5:
        return None
    named = ", ".join(f"{code} {n / total:.0%}" for code, n in Counter(known).most_common(3))
    return (f"these documents are mostly not English ({named}) but this index embeds with {model_id}, an English "
            f"model: BM25 reads each language, the embedder does not; for a multilingual index, ingest them into "
            f"a new --index (it will embed with {MODEL_ID})")
