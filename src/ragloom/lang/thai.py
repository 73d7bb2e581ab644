"""Thai words for BM25: newmm, dictionary-based maximal matching over Thai Character Clusters.

Thai puts no spaces between words. nlpo3 (PyThaiNLP's Rust port of newmm, Apache-2.0) cuts a
run of Thai script into the words of PyThaiNLP's dictionary ``words_th.txt`` (62,107 words,
CC0-1.0), which ships gzipped beside this module (``data/README.md`` records its origin and
hash). On XQuAD's Thai half it ranks better than character bigrams (BENCHMARKS.md, "Word
segmenters").

nlpo3 runs in "unsafe" mode: its safe mode (meant to bound the time taken on ambiguous text)
returns pieces of the wrong part of the text once a run passes about 130 characters (1.4.0),
while the plain mode measured linear, about 0.1 s for 200,000 characters of any text tried.
A cut that does not spell its run back is not trusted: that run is read as bigrams instead.
"""

from __future__ import annotations

import gzip
import hashlib
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from ..errors import RagloomError

#: The Thai block (letters, vowel signs, tone marks, digits, ๆ and ฯ).
THAI_SCRIPT = "\u0e00-\u0e7f"
#: PyThaiNLP 5.4.0's ``pythainlp/corpus/words_th.txt``, gzipped.
DICTIONARY = Path(__file__).parent / "data" / "words_th.txt.gz"
#: SHA-256 of the dictionary's words (the file unzipped).
DICTIONARY_SHA256 = "35f65d43ea83b5b981134d5edc3b9afcb64b4ba96146900fc4d312f2940c3265"
# nlpo3 keeps dictionaries by name for the whole process and never replaces one: the name
# carries the hash, so another dictionary never stands in for this one.
_NAME = f"ragloom-words-th-{DICTIONARY_SHA256[:12]}"
_lock = threading.Lock()
_loaded = False


def _dictionary() -> str:
    """The name under which nlpo3 holds the packaged dictionary, loaded on first use."""
    global _loaded
    if _loaded:
        return _NAME
    with _lock:
        if not _loaded:
            _load()
            _loaded = True
    return _NAME


def _load() -> None:
    import nlpo3

    try:
        words = gzip.decompress(DICTIONARY.read_bytes())
    except (OSError, EOFError) as exc:
        raise RagloomError(f"the Thai dictionary {DICTIONARY} cannot be read ({exc}); reinstall ragloom") from None
    # nlpo3 reads a dictionary from a file only.
    with tempfile.TemporaryDirectory(prefix="ragloom-th-") as folder:
        path = Path(folder) / "words_th.txt"
        path.write_bytes(words)
        message, ok = nlpo3.load_dict(str(path), _NAME)
    if not ok and "already exists" not in message:
        raise RagloomError(f"nlpo3 could not load the Thai dictionary: {message}; reinstall ragloom")


def words(run: str) -> list[str]:
    """The words of ``run``, a run of Thai script, in order; its character bigrams if the
    segmenter's pieces do not spell it back."""
    return [run[start:end] for start, end in word_spans(run)]


def word_spans(run: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``run`` (a run of Thai script: no spaces), as ``words``."""
    import nlpo3

    found = nlpo3.segment(run, _dictionary(), safe=False)
    if "".join(found) != run:
        return [(i, i + 2) for i in range(len(run) - 1)] or [(0, len(run))]
    spans, start = [], 0
    for piece in found:
        spans.append((start, start + len(piece)))
        start += len(piece)
    return spans


@lru_cache(maxsize=1)
def segmentation() -> str:
    """What cuts Thai here (segmenter, its version, the dictionary): an index records it, and
    one whose Thai was cut otherwise is rebuilt."""
    from importlib.metadata import version

    return f"newmm nlpo3 {version('nlpo3')} words_th {DICTIONARY_SHA256[:12]}"


def dictionary_sha256() -> str:
    """SHA-256 of the packaged dictionary's words (what ``DICTIONARY_SHA256`` records)."""
    return hashlib.sha256(gzip.decompress(DICTIONARY.read_bytes())).hexdigest()
