"""The entity graph in the index database: entities, mentions (chunk -> entity) and relations.

A relation row is one piece of evidence: a pair of entities related in one chunk.
A source owns its mentions and evidence rows; replacing or removing it deletes just
those, then any entity left without a mention. So an edge lives while any chunk still
supports it, an entity while any chunk still mentions it, and a file change touches
only that file's rows.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..types import Chunk
from .extract import Extraction
from .names import entity_key, merge_short_names
from .tables import Tables

#: Query words that never start an entity match on their own.
_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "that", "the", "their", "them", "they", "this", "to", "was", "were", "what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "you", "your", "than", "then", "there", "these", "those", "also", "about", "into", "over", "after", "before"]
)
_QUERY_TOKEN = re.compile(r"[\w&+-]+(?:'\w+)?")
#: Most n-gram length tried when finding entity names in a query.
_MAX_NGRAM = 6
#: Neighbours followed per entity and hop (the strongest).
_FANOUT = 20


@dataclass(frozen=True)
class EntityInfo:
    id: int
    name: str
    type: str
    description: str
    mentions: int


class Graph:
    """Reads and writes the graph tables of one index."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    # -- writing --------------------------------------------------------------------------------
    def replace_source(
        self, path: str, content_hash: str, extractor: str, chunks: Sequence[Chunk],
        extractions: Sequence[Extraction], aliases: Mapping[str, str], seconds: float = 0.0,
    ) -> int:
        """Replace everything the graph holds for ``path``; return how many chunks were skipped."""
        keyed = _keyed(extractions, aliases)
        skipped = sum(1 for e in extractions if e.skipped)
        with self.tables.transaction() as db:
            self._delete_source_rows(db, path)
            ids = self._entity_ids(db, keyed)
            for chunk, (mentions, relations) in zip(chunks, keyed):
                db.executemany(
                    "INSERT INTO kg_mentions(chunk_id, source, entity_id, count) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT(chunk_id, entity_id) DO UPDATE SET count = kg_mentions.count + excluded.count",
                    [(chunk.id, path, ids[key], count) for key, (_, count) in mentions.items()],
                )
                db.executemany(
                    "INSERT INTO kg_relations(head, tail, chunk_id, source, description, weight)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(head, tail, chunk_id)"
                    " DO UPDATE SET weight = kg_relations.weight + excluded.weight",
                    [(ids[h], ids[t], chunk.id, path, d, w) for (h, t), (d, w) in relations.items()],
                )
            db.upsert("kg_sources", ("path", "content_hash", "extractor", "chunks", "skipped", "seconds"), ("path",),
                      [(path, content_hash, extractor, len(chunks), skipped, seconds)])
            self._prune(db)
        return skipped

    def remove_source(self, path: str) -> None:
        with self.tables.transaction() as db:
            self._delete_source_rows(db, path)
            db.execute("DELETE FROM kg_sources WHERE path = ?", (path,))
            self._prune(db)

    @staticmethod
    def _delete_source_rows(db: Tables, path: str) -> None:
        db.execute("DELETE FROM kg_mentions WHERE source = ?", (path,))
        db.execute("DELETE FROM kg_relations WHERE source = ?", (path,))

    @staticmethod
    def _prune(db: Tables) -> None:
        """Entities without a mention go, with their community memberships."""
        db.execute("DELETE FROM kg_communities WHERE entity_id NOT IN (SELECT entity_id FROM kg_mentions)")
        db.execute("DELETE FROM kg_entities WHERE id NOT IN (SELECT entity_id FROM kg_mentions)")
        db.execute("DELETE FROM kg_community_summaries WHERE id NOT IN (SELECT id FROM kg_communities)")

    def _entity_ids(self, db: Tables, keyed: Sequence[tuple[dict[str, Any], dict[Any, Any]]]) -> dict[str, int]:
        first: dict[str, Any] = {}
        for mentions, _ in keyed:
            for key, (entity, _) in mentions.items():
                known = first.get(key)
                if known is None or (not known.description and entity.description):
                    first[key] = entity
        db.executemany(
            "INSERT INTO kg_entities(key, name, type, description) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
            " type = CASE WHEN kg_entities.type = '' THEN excluded.type ELSE kg_entities.type END,"
            " description = CASE WHEN kg_entities.description = '' THEN excluded.description"
            " ELSE kg_entities.description END",
            [(key, e.name, e.type, e.description) for key, e in first.items()],
        )
        return {key: eid for key, eid in self.tables.select_in("SELECT key, id FROM kg_entities WHERE key", list(first))}

    # -- state ------------------------------------------------------------------------------------
    def built_sources(self) -> dict[str, tuple[str, str]]:
        """Source path -> (content hash, extractor id) the graph was built from."""
        return {p: (h, x) for p, h, x in self.tables.execute("SELECT path, content_hash, extractor FROM kg_sources")}

    def counts(self) -> dict[str, int]:
        one = lambda q: int(self.tables.execute(q).fetchone()[0])
        return {
            "entities": one("SELECT COUNT(*) FROM kg_entities"),
            "mentions": one("SELECT COUNT(*) FROM kg_mentions"),
            "relations": one("SELECT COUNT(*) FROM (SELECT DISTINCT head, tail FROM kg_relations) AS pairs"),
            "evidence": one("SELECT COUNT(*) FROM kg_relations"),
            "sources": one("SELECT COUNT(*) FROM kg_sources"),
            "skipped_chunks": one("SELECT COALESCE(SUM(skipped), 0) FROM kg_sources"),
            "communities": one("SELECT COUNT(DISTINCT id) FROM kg_communities"),
        }

    # -- reading ---------------------------------------------------------------------------------
    def find(self, name: str, aliases: Mapping[str, str] | None = None) -> EntityInfo | None:
        row = self.tables.execute(
            "SELECT e.id, e.name, e.type, e.description, COUNT(m.chunk_id) FROM kg_entities e"
            " LEFT JOIN kg_mentions m ON m.entity_id = e.id WHERE e.key = ? GROUP BY e.id",
            (entity_key(name, aliases),),
        ).fetchone()
        return EntityInfo(*row) if row else None

    def search_names(self, text: str, limit: int = 10) -> list[EntityInfo]:
        rows = self.tables.execute(
            "SELECT e.id, e.name, e.type, e.description, COUNT(m.chunk_id) AS n FROM kg_entities e"
            " JOIN kg_mentions m ON m.entity_id = e.id WHERE e.key LIKE ? GROUP BY e.id ORDER BY n DESC, e.name LIMIT ?",
            (f"%{entity_key(text)}%", limit),
        )
        return [EntityInfo(*row) for row in rows]

    def top_entities(self, limit: int = 20) -> list[EntityInfo]:
        rows = self.tables.execute(
            "SELECT e.id, e.name, e.type, e.description, COUNT(m.chunk_id) AS n FROM kg_entities e"
            " JOIN kg_mentions m ON m.entity_id = e.id GROUP BY e.id ORDER BY n DESC, e.name LIMIT ?", (limit,))
        return [EntityInfo(*row) for row in rows]

    def neighbours(self, entity_id: int, limit: int = _FANOUT) -> list[tuple[EntityInfo, float, str]]:
        """(neighbour, summed weight, one description) by weight, strongest first."""
        rows = self.tables.execute(
            "SELECT other, SUM(weight) AS w, MAX(description) FROM ("
            " SELECT tail AS other, weight, description FROM kg_relations WHERE head = ?"
            " UNION ALL SELECT head AS other, weight, description FROM kg_relations WHERE tail = ?) AS edges"
            " GROUP BY other ORDER BY w DESC, other LIMIT ?",
            (entity_id, entity_id, limit),
        ).fetchall()
        infos = self.entities([r[0] for r in rows])
        return [(infos[other], float(w), d or "") for other, w, d in rows if other in infos]

    def entities(self, ids: Sequence[int]) -> dict[int, EntityInfo]:
        query = ("SELECT e.id, e.name, e.type, e.description, (SELECT COUNT(*) FROM kg_mentions m"
                 " WHERE m.entity_id = e.id) FROM kg_entities e WHERE e.id")
        return {row[0]: EntityInfo(*row) for row in self.tables.select_in(query, list(ids))}

    def chunks_of(self, entity_ids: Sequence[int]) -> dict[int, list[str]]:
        found: dict[int, list[str]] = defaultdict(list)
        for eid, cid in self.tables.select_in("SELECT entity_id, chunk_id FROM kg_mentions WHERE entity_id",
                                              list(entity_ids)):
            found[eid].append(cid)
        return found

    def entities_of_chunks(self, chunk_ids: Sequence[str]) -> dict[str, set[int]]:
        found: dict[str, set[int]] = defaultdict(set)
        for cid, eid in self.tables.select_in("SELECT chunk_id, entity_id FROM kg_mentions WHERE chunk_id",
                                              list(chunk_ids)):
            found[cid].add(eid)
        return found

    # -- retrieval ---------------------------------------------------------------------------------
    def query_entities(self, text: str, aliases: Mapping[str, str] | None = None) -> dict[int, float]:
        """Entities named in ``text``, weighted by specificity (an entity mentioned in few
        chunks says more than one mentioned everywhere).

        Spans of 1-6 words are looked up by key, longest first, and a word belongs to one
        match at most ("Billy McFarland", not also "McFarland"). In a query that uses
        capitals, a span must hold a capitalised word or a number, so "wire" in "charged
        with wire fraud" does not find the TV series The Wire."""
        words = _QUERY_TOKEN.findall(text)
        cased = any(ch.isupper() for ch in text) and not text.isupper()
        spans: dict[tuple[int, int], str] = {}
        for n in range(_MAX_NGRAM, 0, -1):
            for i in range(len(words) - n + 1):
                span = words[i : i + n]
                first = span[0].casefold()
                if first in _STOPWORDS and (n == 1 or first != "the"):
                    continue
                if n == 1 and len(first) < 3:
                    continue
                if cased and not any(w[0].isupper() or w[0].isdigit() for w in span if w.casefold() not in _STOPWORDS):
                    continue
                spans[(i, i + n)] = entity_key(" ".join(span), aliases)
        found = {key: (eid, n) for key, eid, n in self.tables.select_in(
            "SELECT e.key, e.id, (SELECT COUNT(*) FROM kg_mentions m WHERE m.entity_id = e.id) FROM kg_entities e"
            " WHERE e.key", [k for k in spans.values() if k])}
        taken: set[int] = set()
        seeds: dict[int, float] = {}
        for (start, end), key in sorted(spans.items(), key=lambda item: (item[0][0] - item[0][1], item[0][0])):
            if key not in found or taken & set(range(start, end)):
                continue
            taken |= set(range(start, end))
            eid, mentions = found[key]
            if mentions:
                seeds[eid] = specificity(mentions)
        return seeds

    def neighbourhood(self, seeds: Mapping[int, float], hops: int, decay: float = 0.5) -> dict[int, float]:
        """Seeds and the entities up to ``hops`` relations away; a neighbour's weight is its
        parent's times ``decay`` times the edge's share of the parent's strongest edge."""
        weights = dict(seeds)
        frontier = dict(seeds)
        for _ in range(hops):
            following: dict[int, float] = {}
            for eid, weight in frontier.items():
                edges = self.neighbours(eid)
                if not edges:
                    continue
                strongest = max(w for _, w, _ in edges)
                for info, w, _ in edges:
                    value = weight * decay * (w / strongest) * specificity(info.mentions)
                    if value > weights.get(info.id, 0.0) and value > following.get(info.id, 0.0):
                        following[info.id] = value
            for eid, value in following.items():
                weights[eid] = max(weights.get(eid, 0.0), value)
            frontier = following
        return weights

    def chunk_scores(self, weights: Mapping[int, float]) -> dict[str, float]:
        """Each chunk's summed weight of the entities it mentions."""
        scores: dict[str, float] = defaultdict(float)
        for eid, chunk_ids in self.chunks_of(list(weights)).items():
            for cid in chunk_ids:
                scores[cid] += weights[eid]
        return dict(scores)

    # -- export -----------------------------------------------------------------------------------
    def to_networkx(self) -> Any:
        from ..optional import require

        nx = require("networkx", extra="graph", feature="graph export and communities")
        graph = nx.Graph()
        for eid, name, etype, description, mentions in self.tables.execute(
            "SELECT e.id, e.name, e.type, e.description, COUNT(m.chunk_id) FROM kg_entities e"
            " JOIN kg_mentions m ON m.entity_id = e.id GROUP BY e.id"
        ):
            graph.add_node(eid, label=name, type=etype, description=description, mentions=mentions)
        for head, tail, weight, chunks in self.tables.execute(
            "SELECT head, tail, SUM(weight), COUNT(*) FROM kg_relations GROUP BY head, tail"
        ):
            if graph.has_edge(head, tail):
                graph[head][tail]["weight"] += float(weight)
                graph[head][tail]["chunks"] += chunks
            else:
                graph.add_edge(head, tail, weight=float(weight), chunks=chunks)
        return graph

    def export_graphml(self, path: str | Path) -> tuple[int, int]:
        from ..optional import require

        nx = require("networkx", extra="graph", feature="graph export")
        graph = self.to_networkx()
        nx.write_graphml(graph, str(path))
        return graph.number_of_nodes(), graph.number_of_edges()


def specificity(mentions: int) -> float:
    """1 for an entity mentioned once, falling slowly with how common it is."""
    return 1.0 / math.log2(1.0 + max(mentions, 1))


def _keyed(
    extractions: Sequence[Extraction], aliases: Mapping[str, str]
) -> list[tuple[dict[str, Any], dict[tuple[str, str], tuple[str, float]]]]:
    """Per chunk: entity key -> (entity, count) and (head key, tail key) -> (description, weight)."""
    labels = {(entity_key(e.name, aliases), e.type) for x in extractions for e in x.entities}
    short = merge_short_names(labels)
    out = []
    for extraction in extractions:
        def key(name: str) -> str:
            k = entity_key(name, aliases)
            return short.get(k, k)

        mentions: dict[str, Any] = {}
        for entity in extraction.entities:
            k = key(entity.name)
            if not k:
                continue
            _, count = mentions.get(k, (entity, 0))
            mentions[k] = (mentions.get(k, (entity, 0))[0], count + entity.count)
        relations: dict[tuple[str, str], tuple[str, float]] = {}
        for relation in extraction.relations:
            head, tail = key(relation.head), key(relation.tail)
            if not head or not tail or head == tail or head not in mentions or tail not in mentions:
                continue
            pair = (head, tail) if head < tail else (tail, head)
            description, weight = relations.get(pair, (relation.description, 0.0))
            relations[pair] = (description or relation.description, weight + relation.weight)
        out.append((mentions, relations))
    return out
