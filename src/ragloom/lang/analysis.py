"""How BM25 reads each language: one tantivy analyser per family of languages, one field each.

A chunk is indexed in the field of its language's family (its ``lang`` metadata), and a
query is analysed by every family the index holds, each clause on its own field, so a query
meets each chunk the way that chunk was read:

- English (and text whose language is undetermined): the analyser ragloom always used
  (simple tokens, English stop words, English stemmer), on the field ``text``.
- The 17 other languages tantivy has a stemmer for: Unicode-aware tokens (letters, combining
  marks and digits), lower case, that language's stop words (where tantivy has them: not for
  Arabic, Greek, Romanian, Tamil, Turkish) and stemmer.
- Thai (``th``), which puts no spaces between words: the words of a dictionary-based segmenter
  (newmm, ``thai.py``) over Thai script, Unicode-aware tokens elsewhere. Measured above the
  bigrams on XQuAD's Thai half (nDCG@10 0.977 against 0.952, BENCHMARKS.md).
- Chinese and Japanese (``cjk``), Lao, Khmer and Burmese (``sea``), which do not put spaces
  between words either: overlapping character bigrams over those scripts, words elsewhere
  (for Chinese, segmenters measured no better than the bigrams). ``sea`` still reads Thai
  script as bigrams: an index written before Thai had its own family holds its Thai chunks
  there, and a query read by every family the index holds still meets them.
- Every other language (Hindi and the other Indic scripts, Vietnamese, Korean, ...):
  Unicode-aware tokens and lower case, no stemming.

The analysers are keyed by family name, so a store that keeps its own text search (or an
identifier-aware family for source code) adds one entry to ``FAMILIES``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import re
from dataclasses import dataclass
from functools import lru_cache

import tantivy

from . import thai
from .detect import UNDETERMINED

#: Letters (with their combining marks) and digits, in any script.
UNICODE_TOKEN = r"[\p{L}\p{M}\p{N}]+"
#: Tokens longer than this are dropped (base64 blobs, hashes).
MAX_TOKEN_CHARS = 40

#: Languages with a tantivy stemmer and stop-word list, by ISO 639-1 code.
STEMMED = {
    "ar": "arabic", "da": "danish", "nl": "dutch", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hu": "hungarian", "it": "italian", "no": "norwegian", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish",
}
#: Stemmed languages tantivy has no stop words for (BM25's IDF weighs their function words down).
_NO_STOP_WORDS = frozenset({"ar", "el", "ro", "ta", "tr"})
#: Scripts written without spaces between words, read as character bigrams, by family.
BIGRAM_SCRIPTS = {
    "cjk": "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff",
    "sea": "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f",
}
_BIGRAM_LANGUAGES = {"zh": "cjk", "ja": "cjk", "lo": "sea", "km": "sea", "my": "sea"}
#: Scripts read as the words of a segmenter, by family (the family is the language's code).
SEGMENTED_SCRIPTS = {"th": thai.THAI_SCRIPT}
_SEGMENTERS = {"th": thai.word_spans}
#: What each segmented family's words depend on (an index records it with its terms).
SEGMENTATIONS = {"th": thai.segmentation}


@dataclass(frozen=True)
class Family:
    """One way of reading text: its field in the BM25 index and how a text becomes tokens."""

    name: str
    field: str
    analyzer_name: str


def _family(name: str) -> Family:
    return Family(name, "text" if name == "en" else f"text_{name}", "ragloom_en" if name == "en" else f"ragloom_{name}")


#: Every family, in a fixed order (the BM25 schema has one field per family; families added
#: later come last).
FAMILIES: dict[str, Family] = {name: _family(name)
                               for name in ["en", *STEMMED, *BIGRAM_SCRIPTS, "other", *SEGMENTED_SCRIPTS]}
DEFAULT_FAMILY = "en"


def family_of(language: str | None) -> Family:
    """The family that reads text in ``language`` (an ISO code; None or ``und``: English's)."""
    if not language or language == UNDETERMINED or language == "en":
        return FAMILIES[DEFAULT_FAMILY]
    code = language.lower().split("-")[0].split("_")[0]
    if code in STEMMED or code in SEGMENTED_SCRIPTS:
        return FAMILIES[code]
    if code in _BIGRAM_LANGUAGES:
        return FAMILIES[_BIGRAM_LANGUAGES[code]]
    return FAMILIES["other"] if code != "en" else FAMILIES[DEFAULT_FAMILY]


def english_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def analyzer(family: str) -> tantivy.TextAnalyzer:
    """A new tantivy analyser for ``family`` (texts go through ``prepare`` first)."""
    if family == "en":
        return english_analyzer()
    builder = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(UNICODE_TOKEN))
               .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
               .filter(tantivy.Filter.lowercase()))
    if family in STEMMED:
        if family not in _NO_STOP_WORDS:
            builder = builder.filter(tantivy.Filter.stopword(STEMMED[family]))
        builder = builder.filter(tantivy.Filter.stemmer(STEMMED[family]))
    return builder.build()


def prepare(family: str, text: str) -> str:
    """``text`` as the family's analyser takes it: runs of a bigram script become their bigrams,
    runs of Thai its words, and Hindi words lose their inflectional suffixes."""
    if family == "other":
        return _DEVANAGARI_WORD.sub(_stem_hindi, text)
    if family in SEGMENTED_SCRIPTS:
        return _run(SEGMENTED_SCRIPTS[family]).sub(_segmented(family), text)
    pattern = _bigram_run(family)
    return pattern.sub(_bigrams, text) if pattern is not None else text


# The light Hindi stemmer of Ramanathan & Rao (2003): the longest of these suffixes is cut off a
# word that keeps at least two characters besides it.
_HINDI_SUFFIXES = sorted("""
ो े ू ु ी ि ा
कर ाओ िए ाई ाए ने नी ना ते ीं ती ता ाँ ां ों ें
ाकर ाइए ाईं ाया ेगी ेगा ोगी ोगे ाने ाना ाते ाती ाता तीं ाओं ाएं ुओं ुएं ुआं
ाएगी ाएगा ाओगी ाओगे एंगी ेंगी एंगे ेंगे ूंगी ूंगा ातीं नाओं नाएं ताओं ताएं ियाँ ियों ियां
ाएंगी ाएंगे ाऊंगी ाऊंगा ाइयाँ ाइयों ाइयां
""".split(), key=len, reverse=True)
_DEVANAGARI_WORD = re.compile("[\u0900-\u0963\u0966-\u097f]+")


def _stem_hindi(match: re.Match[str]) -> str:
    word = match.group(0)
    for suffix in _HINDI_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=None)
def _bigram_run(family: str) -> re.Pattern[str] | None:
    script = BIGRAM_SCRIPTS.get(family)
    return _run(script) if script else None


@lru_cache(maxsize=None)
def _run(script: str) -> re.Pattern[str]:
    return re.compile(f"[{script}]+")


def word_spans(family: str, run: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``run``, a run of the script ``family`` segments."""
    return _SEGMENTERS[family](run)


def _segmented(family: str) -> Callable[[re.Match[str]], str]:
    def words(match: re.Match[str]) -> str:
        run = match.group(0)
        return " " + " ".join(run[start:end] for start, end in word_spans(family, run)) + " "

    return words


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


class Analyzers:
    """One analyser per family, built once (a tantivy analyser may be shared by threads)."""

    def __init__(self) -> None:
        self._by_family = {name: analyzer(name) for name in FAMILIES}

    def register(self, index: tantivy.Index) -> None:
        for name, family in FAMILIES.items():
            index.register_tokenizer(family.analyzer_name, self._by_family[name])

    def terms(self, family: str, text: str) -> list[str]:
        """The distinct terms of ``text`` as ``family`` reads it, in order."""
        return list(self.term_counts(family, text))

    def term_counts(self, family: str, text: str) -> dict[str, int]:
        """The distinct terms of ``text`` as ``family`` reads it, in order, with how often each occurs."""
        return dict(Counter(self._by_family[family].analyze(prepare(family, text))))

    @property
    def english(self) -> tantivy.TextAnalyzer:
        return self._by_family["en"]
