"""Entity names to merge keys: case, punctuation, articles, possessives, plurals and aliases.

``entity_key("The Bolsheviks'")`` and ``entity_key("bolshevik")`` are the same key, so
mentions of one thing in different spellings meet in one node. The rules are small and
deterministic on purpose: a wrong merge joins two things for good, a missed one only
leaves two nodes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

_PUNCTUATION = re.compile(r"[^\w\s&+-]")
_SPACE = re.compile(r"\s+")
_ARTICLES = ("the ", "a ", "an ")
#: Last words that end in "s" without being plurals.
_NOT_PLURAL = re.compile(r"(ss|us|is|ics|ous|as|os|ys|'s)$")


def singular(word: str) -> str:
    """A crude English singular of the last word of a name ("parties" -> "party")."""
    if len(word) <= 3 or not word.endswith("s") or _NOT_PLURAL.search(word):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    return word[:-1]


def entity_key(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """The merge key of an entity name; ``aliases`` maps alias keys to canonical keys."""
    text = unicodedata.normalize("NFKC", name).casefold().replace("\u2019", "'")
    text = re.sub(r"'s\b|'\B", "", text)
    text = _SPACE.sub(" ", _PUNCTUATION.sub(" ", text)).strip()
    for article in _ARTICLES:
        if text.startswith(article) and len(text) > len(article):
            text = text[len(article):]
            break
    if text:
        *head, last = text.split(" ")
        text = " ".join([*head, singular(last)])
    if aliases:
        text = aliases.get(text, text)
    return text


def alias_keys(aliases: Mapping[str, str]) -> dict[str, str]:
    """The config's ``alias: canonical name`` pairs as keys (canonical names map to themselves)."""
    return {entity_key(alias): entity_key(canonical) for alias, canonical in aliases.items()}


def plausible_name(name: str, text: str | None = None) -> bool:
    """A usable entity name: 2-80 characters with a letter, and (when ``text`` is given)
    present in it, so a model's invented entities never enter the graph."""
    name = name.strip()
    if not (2 <= len(name) <= 80) or not any(ch.isalpha() for ch in name):
        return False
    if text is None:
        return True
    return _SPACE.sub(" ", name.casefold()) in _SPACE.sub(" ", text.casefold())


def merge_short_names(names: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Within one document, a one-word PERSON key that is the last word of a longer PERSON
    key is that person ("obama" -> "barack obama"); returns short key -> long key."""
    people = [key for key, label in names if label == "PERSON"]
    full = [key for key in people if " " in key]
    merged: dict[str, str] = {}
    for key in people:
        if " " in key:
            continue
        owners = {other for other in full if other.split(" ")[-1] == key or other.split(" ")[0] == key}
        if len(owners) == 1:
            merged[key] = owners.pop()
    return merged
