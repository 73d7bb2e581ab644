"""Which language a text is in, offline: py3langid (its model ships in its wheel, 4.6 MB).

Chosen by measurement on XQuAD (BENCHMARKS.md "Languages"): on the 632 questions of each of the
12 languages it names the right language for 99-100% of them (Chinese 89%: the rest it calls
Wu or Cantonese, folded into ``zh`` here), every paragraph right, at ~20,000 questions and
~3,000 paragraphs a second on one core. Without the package, the script decides (Han, Kana,
Hangul, Thai, Devanagari, Arabic, Cyrillic, Greek); Latin text is then undetermined.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

#: The language of a text too short or too mixed to tell.
UNDETERMINED = "und"
#: Below this probability the detector's guess is not used.
MIN_CONFIDENCE = 0.5
#: Letters a text needs before its language is guessed.
MIN_LETTERS = 3

# Varieties and macro-languages the detector names apart, folded into the language whose
# analyser reads them.
_FOLD = {"wuu": "zh", "yue": "zh", "arz": "ar", "ary": "ar", "nb": "no", "nn": "no", "uzs": "uz", "hbo": "he",
         "gom": "hi", "zxx": UNDETERMINED}

# Scripts that name their language (or the analyser family reading them) on their own.
_SCRIPT_LANGUAGES = (("CJK", "zh"), ("HIRAGANA", "ja"), ("KATAKANA", "ja"), ("HANGUL", "ko"), ("THAI", "th"),
                     ("DEVANAGARI", "hi"), ("ARABIC", "ar"), ("CYRILLIC", "ru"), ("GREEK", "el"), ("TAMIL", "ta"))


_LETTER = re.compile(r"[^\W\d_]")


def detect_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code or ``und``, probability) of ``text``'s language."""
    if not _has_letters(text[:2000], MIN_LETTERS):
        return UNDETERMINED, 0.0
    identifier = _identifier()
    if identifier is None:
        return _by_script(text)
    code, probability = identifier.classify(text[:5000])
    code = _FOLD.get(code, code)
    if probability < MIN_CONFIDENCE:
        return UNDETERMINED, float(probability)
    if code == "zh" and _has_kana(text):  # Japanese mixes Han with kana; the model may say zh
        code = "ja"
    return code, float(probability)


def _has_letters(text: str, wanted: int) -> bool:
    for found, _ in enumerate(_LETTER.finditer(text), start=1):
        if found >= wanted:
            return True
    return False


def language_shares(texts: Iterable[str]) -> dict[str, float]:
    """Each language's share of the characters of ``texts`` (undetermined text left out)."""
    counts: Counter[str] = Counter()
    for text in texts:
        code, _ = detect_language(text)
        if code != UNDETERMINED:
            counts[code] += len(text)
    total = sum(counts.values())
    return {code: n / total for code, n in counts.most_common()} if total else {}


def mostly_non_english(texts: Iterable[str], share: float = 0.5) -> bool:
    """Whether more than ``share`` of the (determined) characters of ``texts`` are not English."""
    shares = language_shares(texts)
    return bool(shares) and 1.0 - shares.get("en", 0.0) > share


_LOADING = threading.Lock()


def _identifier() -> Any:
    # Loaded once, under a lock: the first searches of a server come on many threads at once, and
    # lru_cache alone let each of them load the model (0.75 s of CPU each, measured; the twelve
    # readers of a three-index server loaded it up to twelve times).
    with _LOADING:
        return _load_identifier()


@lru_cache(maxsize=1)
def _load_identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:
        return None
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _by_script(text: str) -> tuple[str, float]:
    counts: Counter[str] = Counter()
    for ch in text[:2000]:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            counts[next((code for script, code in _SCRIPT_LANGUAGES if name.startswith(script)), "latin")] += 1
    code, n = counts.most_common(1)[0]
    if code == "latin" or n < sum(counts.values()) / 2:
        return UNDETERMINED, 0.0
    if code == "zh" and counts["ja"]:
        code = "ja"
    return code, n / sum(counts.values())


def _has_kana(text: str) -> bool:
    return any("\u3040" <= ch <= "\u30ff" for ch in text[:2000])
