"""Bytes to text for the text-based loaders, without ever crashing on an encoding.

UTF-8 (with or without a BOM) is the common case. Anything else is guessed with
charset-normalizer and reported as a warning, so a user can see that "café" in
their report came from a cp1252 file and was not silently mangled.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from ...errors import CorruptDocumentError
from .base import LoadResult

#: How much of a file is looked at to decide whether it is binary.
BINARY_SNIFF_BYTES = 8192

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# charset-normalizer often cannot tell single-byte code pages apart on short texts (it
# reads "naïve" as Baltic "naļve"). The Western Windows code page is by far the most
# common, so it wins whenever its decoding is about as clean as the best one; measured
# on French, German, Polish, Czech, Russian, Greek, Japanese and Chinese samples.
_PREFERRED_FALLBACK = "cp1252"
_PREFERENCE_MARGIN = 0.1


def empty_result(source: str) -> LoadResult:
    return LoadResult([], [f"{source} is empty; nothing to index"])


def looks_binary(data: bytes) -> bool:
    """A NUL byte early in a file that has no UTF-16/32 BOM means it is not text."""
    if any(data.startswith(bom) for bom, _ in _BOMS):
        return False
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def decode_bytes(data: bytes, source: str) -> tuple[str, list[str]]:
    """Text of ``data`` and the warnings to report (empty for UTF-8)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data.decode(encoding, errors="replace")
            return text.removeprefix("\ufeff"), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    encoding = guess_encoding(data)
    text = data.decode(encoding, errors="replace")
    return text, [f"{source} is not UTF-8; decoded as {encoding}"]


def guess_encoding(data: bytes) -> str:
    from charset_normalizer import from_bytes

    results = list(from_bytes(data))
    if not results:
        return _PREFERRED_FALLBACK
    best_chaos = min(r.chaos for r in results)
    for result in results:
        if _PREFERRED_FALLBACK in result.could_be_from_charset and result.chaos <= best_chaos + _PREFERENCE_MARGIN:
            return _PREFERRED_FALLBACK
    return results[0].encoding


def decode_text(data: bytes, path: Path, source: str) -> tuple[str, list[str]]:
    """Decoded text of the bytes of a text-type file; CorruptDocumentError if it is binary."""
    if looks_binary(data):
        raise CorruptDocumentError(
            f"{source} looks like a binary file (it contains NUL bytes) although its name "
            f"says {path.suffix or 'text'}; rename it or leave it out of the ingest"
        )
    return decode_bytes(data, source)
