"""How a question's words are read in each language, for the offline follow-up rewrite
(``generate/followup.py``): its stop words, the words that point back at what the conversation
has named, the openers that continue the previous turn, and what counts as one word.

- English keeps the hand lists the rewrite was tuned with on convqa-dev (BENCHMARKS.md).
- Every language stopwords-iso has a list for (58, MIT, ``stopwordsiso`` ships them in its
  wheel) uses that list; the referring words and openers of the 12 XQuAD languages and Japanese
  are kept here by hand (short, closed classes: personal and demonstrative pronouns, "and",
  "what about"). A language with neither is read as English, as before.
- Chinese, Japanese and Thai put no spaces between words: a run of their script is split at its
  stop words (forward longest match), the way keyword extractors such as RAKE find candidate
  phrases, and what lies between is one term. Such a term counts as ``len / CHARS_PER_WORD``
  words towards "too few words of its own" (calibrated on XQuAD: BENCHMARKS.md, issue 31).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .analysis import BIGRAM_SCRIPTS, SEGMENTED_SCRIPTS
from .detect import UNDETERMINED

#: Words that carry no topic: function words, question words, and chat filler.
ENGLISH_STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
    each else ever few for from further get gets getting give go got had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't
    it it's its itself just know let let's like make me more most much must mustn't my myself need no nor not now
    of off on once one only or other ought our ours ourselves out over own please really same say see shall shan't
    she she'd she'll she's should shouldn't so some such tell than thank thanks that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've thing things think this those through
    to too under until up us use used very want was wasn't way we we'd we'll we're we've well were weren't what
    what's when when's where where's which while who who's whom why why's will with won't would wouldn't yes yet
    you you'd you'll you're you've your yours yourself yourselves ok okay hi hello sure also maybe i'd many""".split()
)
#: Words that point back at something the conversation has already named.
ENGLISH_REFERRING = frozenset(
    """he him his she her hers it its they them their theirs this that these those there then such former latter
    one ones same above aforementioned""".split()
)
_ENGLISH_OPENERS = re.compile(r"^\s*(and|or|but|so|also|what about|how about|what else|anything else|then|why not)\b",
                              re.I)
_ENGLISH_WORD = re.compile(r"[^\W_][\w'’.\-]*[^\W_]|[^\W_]")
_ENGLISH_PROPER = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][\w'’\-]*(?:\s+(?:of|de|the|and|&)?\s*[A-Z][\w'’\-]*)*)")

# Personal (third person) and demonstrative pronouns and "there"/"then", by language: the words
# that make a question lean on the turns before it. Articles that look like pronouns (Spanish
# "la", Greek "την") are left out. Languages that drop the subject (Spanish, Arabic, Chinese...)
# are caught by the word count instead.
REFERRING = {
    "de": "er sie es ihn ihm ihr ihre ihren ihrem ihrer ihnen sein seine seinen seinem seiner seines dies diese "
          "dieser dieses diesen diesem dort damals dessen deren derselbe dieselbe dasselbe",
    "es": "él ella ellos ellas su sus este esta esto estos estas ese esa eso esos esas aquel aquella aquello "
          "allí allá entonces dicho dicha",
    "ro": "el ea ei ele lui lor său sa săi sale acesta aceasta acestea aceștia acela aceea acolo atunci",
    "ru": "он она оно они его её ее ему ей им ими их него неё нее нему ней ним них этот эта это эти этого этой "
          "этом этим этих тот та те того той там тогда",
    "el": "αυτός αυτή αυτό αυτοί αυτές αυτά αυτού αυτής αυτών αυτόν εκείνος εκείνη εκείνο εκεί τότε",
    "tr": "o onu onun ona onda ondan onlar onları onların onlara bu bunu bunun buna şu şunu orada orası",
    # Not هو/هي ("he"/"she"): in a question they are mostly the copula ("ما هو" = "what is"; 135
    # of XQuAD's 632 Arabic questions, none of them a follow-up).
    "ar": "ذلك تلك هذا هذه هؤلاء هناك حينئذ",
    "hi": "वह वे उस उसे उसका उसकी उसके उसने उन उन्हें उनका उनकी उनके उन्होंने यह ये इस इसे इसका इसकी इसके "
          "वहाँ वहां तब",
    "vi": "nó họ ấy đó này kia đấy",
    "zh": "他 她 它 他们 她们 它们 其 该 此 这 那 这个 那个 这些 那些 那里 这里 当时",
    "ja": "彼 彼女 彼ら それ これ あれ その この あの そこ ここ あそこ 当時",
    "th": "เขา เธอ มัน พวกเขา นั้น นี้ ที่นั่น ตอนนั้น",
}
# Question words stopwords-iso's lists lack (they carry no topic, and a question always has one).
QUESTION_WORDS = {
    "th": "ใคร เมื่อไหร่ เมื่อไร ที่ไหน อย่างไร ยังไง ทำไม กี่ ไหน ไหม หรือไม่ บ้าง เท่าไร เท่าไหร่ ใด",
    "zh": "是否",
    "ja": "誰 いつ どう なぜ どれ 何時 いくつ ですか ました",
}
# Openers that continue the previous turn ("and in France?", "what about ...").
OPENERS = {
    "de": r"und|oder|aber|also|auch|was ist mit|wie steht es mit|und was",
    "es": r"y|o|pero|entonces|también|qué hay de|y qué",
    "ro": r"și|sau|dar|deci|de asemenea|ce zici de|dar ce",
    "ru": r"а|и|но|или|тогда|также|а как же|а что",
    "el": r"και|ή|αλλά|τότε|επίσης|τι γίνεται με",
    "tr": r"peki|ve|ya|ama|veya|ayrıca|o zaman",
    "ar": r"وماذا عن|ماذا عن|وماذا|ثم|أو|لكن|وأيضا",
    "hi": r"और|या|लेकिन|तो|फिर",
    "vi": r"và|hoặc|nhưng|còn|thế còn|vậy",
    "zh": r"那么|那|还有|而且|另外|并且|但是|或者|然后",
    "ja": r"それで|では|じゃあ|そして|また|でも",
    "th": r"แล้ว|และ|หรือ|แต่|ส่วน",
}
#: Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Burmese).
_UNSPACED = "".join([*BIGRAM_SCRIPTS.values(), *SEGMENTED_SCRIPTS.values()])
#: Characters of such a script per word: a term of 6 Chinese characters counts as 3 words. Set so
#: that as many of XQuAD's (standalone) questions have too few words as in English (26 of 632;
#: Chinese 24 at 2, Thai 26 at 9: a Thai term between stop words is often several words;
#: ``benchmarks/languages/followup_languages.py``). Japanese takes Chinese's (not measured).
CHARS_PER_WORD = {"zh": 2.0, "ja": 2.0, "th": 9.0}
#: The only one-character stop words a Chinese run is split at: particles and pronouns. The
#: stopwords-iso list also holds 大, 中, 上, 人, 日, 年..., which begin words (中国, 大学).
_CHINESE_SPLITTERS = frozenset("的 了 是 在 吗 呢 吧 啊 和 与 及 或 也 都 就 把 被 给 对 从 向 于 为 以 由 他 她 它 这 那 哪 谁 "
                               "其 之 而 且 但 又 很 最 更 些 等 着 过 得 么 什 怎 何 几 多 少 您 你 我".split())
_JOINS = r"of|de|the|and|&|del|da|di|do|dos|das|von|van|der|la|le|du"


@lru_cache(maxsize=1)
def _classes() -> tuple[str, str]:
    """Combining marks and upper-case letters of the BMP, as character-class bodies (Python's
    ``\\w`` leaves out the vowel signs of Devanagari and Thai, and ``re`` has no ``\\p{Lu}``)."""
    marks: list[str] = []
    upper: list[str] = []
    for code in range(0x80, 0x10000):
        category = unicodedata.category(chr(code))
        if category in ("Mn", "Mc", "Me"):
            marks.append(chr(code))
        elif category in ("Lu", "Lt"):
            upper.append(chr(code))
    return _ranges(marks), "A-Z" + _ranges(upper)


def _ranges(chars: list[str]) -> str:
    spans: list[list[int]] = []
    for code in map(ord, chars):
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in spans)


@dataclass(frozen=True)
class Lexicon:
    """One language's reading of a question's words."""

    language: str
    stop_words: frozenset[str]
    referring: frozenset[str]
    openers: re.Pattern[str]
    word: re.Pattern[str]
    proper: re.Pattern[str]
    fold: Callable[[str], str] = str
    #: Stop words a run of an unspaced script is split at, with the longest one's length.
    splitters: frozenset[str] = frozenset()
    longest_splitter: int = 0

    def words(self, text: str) -> list[str]:
        found = [w.replace("’", "'").strip(".-'").lower() for w in self.word.findall(text)]
        if not self.splitters:
            return found
        return [piece for w in found for piece in self._split(w)]

    def is_stop(self, word: str) -> bool:
        return self.fold(word) in self.stop_words

    def content_words(self, text: str) -> list[str]:
        return [w for w in self.words(text) if not self.is_stop(w) and len(w) > 1 and not w.isdigit()]

    def word_count(self, text: str) -> int:
        """How many words of its own ``text`` has to be searched with (unspaced terms by length)."""
        per_word = CHARS_PER_WORD.get(self.language)
        if per_word is None:
            return len(self.content_words(text))
        return sum(math.ceil(len(w) / per_word) if _UNSPACED_RUN.search(w) else 1 for w in self.content_words(text))

    def names(self, text: str) -> list[str]:
        """Capitalised words and phrases (none in scripts without case), not at a sentence's start."""
        return [m.group(1) for m in self.proper.finditer(text) if not self.is_stop(m.group(1).lower())]

    def _split(self, word: str) -> list[str]:
        if not _UNSPACED_RUN.search(word):
            return [word]
        pieces: list[str] = []
        for part in _UNSPACED_PARTS.findall(word):
            pieces.extend(self._split_run(part) if _UNSPACED_RUN.match(part) else [part])
        return pieces

    def _split_run(self, run: str) -> list[str]:
        """Stop words and the runs between them, by forward longest match."""
        pieces: list[str] = []
        start = i = 0
        while i < len(run):
            match = next((run[i:i + n] for n in range(min(self.longest_splitter, len(run) - i), 0, -1)
                          if run[i:i + n] in self.splitters), None)
            if match is None:
                i += 1
                continue
            if start < i:
                pieces.append(run[start:i])
            pieces.append(match)
            i += len(match)
            start = i
        if start < len(run):
            pieces.append(run[start:])
        return pieces


_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]")
_UNSPACED_PARTS = re.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")

ENGLISH = Lexicon("en", ENGLISH_STOP_WORDS, ENGLISH_REFERRING, _ENGLISH_OPENERS, _ENGLISH_WORD, _ENGLISH_PROPER)


def lexicon(language: str | None) -> Lexicon:
    """The lexicon of ``language`` (an ISO 639-1 code); English's for ``und``, English, and a
    language with no stop-word list."""
    code = (language or UNDETERMINED).lower().split("-")[0].split("_")[0]
    if code in ("en", UNDETERMINED):
        return ENGLISH
    return _lexicon(code) or ENGLISH


@lru_cache(maxsize=None)
def _lexicon(code: str) -> Lexicon | None:
    listed = _stop_words(code)
    if listed is None:
        return None
    fold = _without_accents if code == "el" else str
    referring = frozenset(fold(w) for w in REFERRING.get(code, "").split())
    stop_words = (frozenset(fold(w) for w in [*listed, *QUESTION_WORDS.get(code, "").split()]) | referring
                  | (_CHINESE_SPLITTERS if code == "zh" else frozenset()))
    marks, upper = _classes()
    letter = rf"(?:[^\W_]|[{marks}])"
    word = re.compile(rf"{letter}+(?:['’.\-]{letter}+)*")
    proper = re.compile(rf"(?<![.?!]\s)(?<!^)\b([{upper}](?:[\w'’\-]|[{marks}])*"
                        rf"(?:\s+(?:{_JOINS})?\s*[{upper}](?:[\w'’\-]|[{marks}])*)*)")
    # Spanish opens a question with ¿; quotes and brackets may come first in any language.
    openers = re.compile(rf"^[\s¿¡«\"'“„(]*({OPENERS[code]})" + (r"\b" if code not in CHARS_PER_WORD else ""), re.I) \
        if code in OPENERS else re.compile(r"(?!)")
    splitters: frozenset[str] = frozenset()
    if code in CHARS_PER_WORD:
        splitters = frozenset(w for w in stop_words if _UNSPACED_RUN.match(w) and (len(w) > 1 or code != "zh"))
        splitters |= _CHINESE_SPLITTERS if code == "zh" else frozenset()
    return Lexicon(code, stop_words, referring, openers, word, proper, fold, splitters,
                   max(map(len, splitters), default=0))


def _stop_words(code: str) -> list[str] | None:
    """stopwords-iso's list for ``code``, one-word entries only (Vietnamese lists phrases), none
    that starts with a combining mark (a broken entry); None without the package or the list."""
    try:
        import stopwordsiso
    except ImportError:
        return None
    if not stopwordsiso.has_lang(code):
        return None
    return [w.lower() for w in stopwordsiso.stopwords(code)
            if w and " " not in w and not unicodedata.category(w[0]).startswith("M")]


def _without_accents(word: str) -> str:
    # stopwords-iso writes Greek without its accents (ακομα for ακόμα).
    return "".join(ch for ch in unicodedata.normalize("NFD", word) if not unicodedata.combining(ch))


__all__ = ["ENGLISH", "Lexicon", "lexicon", "ENGLISH_STOP_WORDS", "ENGLISH_REFERRING"]
