"""How often the offline follow-up rewrite thinks a standalone question leans on earlier turns,
in each language of XQuAD (issue 31).

    python -m benchmarks followup_languages

There is no multilingual conversation set here, so whether a rewrite finds more is not measured.
What XQuAD does give is the same 632 first-turn questions in 12 languages: none of them follows
anything, so a question the rewrite would treat as a follow-up is a false alarm, and each
language's rate should be near English's (the rules English was tuned with on convqa-dev). Per
language: the share of questions with a referring word, an opener, or too few words of their
own (``lang/lexicon.py``; Chinese and Thai count a term by its length, calibrated here).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from ragloom.generate.followup import refers_back
from ragloom.lang.lexicon import lexicon

from .. import harness

SHARED = harness.DATASETS
XQUAD = SHARED / "xquad-dev"
LANGUAGES = ["en", "de", "es", "el", "ru", "tr", "ar", "vi", "th", "zh", "hi", "ro"]


def rates(language: str) -> dict[str, float]:
    questions = [json.loads(line)["text"] for line in (XQUAD / language / "queries.jsonl").open(encoding="utf-8")]
    reading = lexicon(language)
    reasons: Counter[str] = Counter()
    for question in questions:
        why = refers_back(question, reading=reading)
        reasons["any"] += why is not None
        if why:
            reasons[why.split(" (")[0].split(" to ")[0]] += 1
    return {"questions": len(questions), "lexicon": reading.language,
            **{key: n / len(questions) for key, n in reasons.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", nargs="+", default=LANGUAGES)
    args = parser.parse_args()
    print("| language | lexicon | questions | treated as follow-ups | referring word | opener | too few words |")
    print("|---|---|---|---|---|---|---|")
    for language in args.languages:
        row = rates(language)
        cells = [f"{row.get(key, 0.0):.3f}" for key in
                 ("any", "it refers back", "it continues the previous turn", "it has fewer than 3 words of its own")]
        print(f"| {language} | {row['lexicon']} | {row['questions']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
