"""RAPTOR (Sarthi et al., 2024): a tree of cluster summaries above the chunks.

Level 0 is the chunks. Each level above clusters the one below with a Gaussian mixture
(size chosen by BIC, soft assignment: a node joins every cluster it belongs to with
probability >= ``threshold``), after reducing the vectors to 10 dimensions (PCA, or UMAP
as in the paper when ``raptor.umap`` is set), summarises each cluster and embeds the
summaries; it stops at ``max_levels`` or when a level has ``stop_below`` nodes or fewer.
The paper's second, local clustering pass inside each global cluster is left out.

Incremental upkeep: chunks of a changed or removed source leave their clusters, and new
chunks join the level-1 cluster whose summary is nearest; those clusters and their
ancestors are marked dirty and re-summarised at the end of the ingest. Cluster shapes
drift as the corpus changes, so ``ragloom status`` reports how many leaves came or went
since the last full build, and ``ragloom raptor rebuild`` re-clusters everything.
"""

from __future__ import annotations

import json
import math
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MissingStructureError
from ..optional import require
from ..types import sha256_hex
from .structures import StructureState, has_table_rows, has_table_rows_in, knowledge_llm, source_chunks
from .tables import Tables, tables

if TYPE_CHECKING:
    from ..config import RaptorConfig
    from ..models.llm import LLM
    from ..parts import IndexParts
    from ..stores.base import Store

_META = ("raptor-meta",)
#: Dimensions the vectors are reduced to before clustering (the paper's UMAP setting).
_REDUCED = 10
_SUMMARY_PROMPT = """Write a short summary (3-5 sentences) of the passages below. Keep the names, \
numbers and facts they share; do not add anything that is not in them.

%s

Summary:"""


@dataclass
class Node:
    id: str
    level: int
    text: str
    children: list[str]
    leaves: list[str]
    vector: np.ndarray
    dirty: bool = False


# -- clustering (pure) ---------------------------------------------------------------------------
def reduce_dimensions(vectors: np.ndarray, use_umap: bool, seed: int) -> np.ndarray:
    """Vectors reduced to at most 10 dimensions: UMAP (cosine) or PCA."""
    n, d = vectors.shape
    target = max(1, min(_REDUCED, d, n - 2))
    if n <= target + 1:
        return vectors
    if use_umap:
        umap = require("umap", extra="raptor-umap", feature="RAPTOR with UMAP", package="umap-learn")
        reducer = umap.UMAP(n_neighbors=max(2, int(math.sqrt(n - 1))), n_components=target, metric="cosine",
                            random_state=seed)
        return np.asarray(reducer.fit_transform(vectors), dtype=np.float64)
    from sklearn.decomposition import PCA

    return PCA(n_components=target, random_state=seed).fit_transform(vectors)


def cluster_sizes(n: int, max_clusters: int, cluster_size: int) -> list[int]:
    """Candidate numbers of clusters for ``n`` nodes, geometrically spaced, from n / cluster_size up."""
    low = max(2, math.ceil(n / cluster_size))
    high = max(low, min(max_clusters, n // 2))
    return sorted({int(round(k)) for k in np.geomspace(low, high, num=min(6, high - low + 1))})


def gmm_clusters(vectors: np.ndarray, max_clusters: int, threshold: float, seed: int,
                 use_umap: bool = False, cluster_size: int = 12) -> list[list[int]]:
    """Soft clusters of the rows: member indices per cluster (every row in at least one)."""
    from sklearn.mixture import GaussianMixture

    n = len(vectors)
    distinct = len(np.unique(np.round(np.asarray(vectors, dtype=np.float64), 6), axis=0))
    if n <= 2 or distinct <= 2:  # nothing to separate (duplicate texts give duplicate vectors)
        return [list(range(n))]
    reduced = reduce_dimensions(np.asarray(vectors, dtype=np.float64), use_umap, seed)
    best, best_bic = None, math.inf
    for k in sorted({min(k, distinct) for k in cluster_sizes(n, max_clusters, cluster_size)}):
        model = GaussianMixture(n_components=k, covariance_type="full", reg_covar=1e-4, random_state=seed,
                                max_iter=100).fit(reduced)
        bic = model.bic(reduced)
        if bic < best_bic:
            best, best_bic = model, bic
    assert best is not None
    probabilities = best.predict_proba(reduced)
    members: list[list[int]] = [[] for _ in range(probabilities.shape[1])]
    for row, p in enumerate(probabilities):
        chosen = set(np.flatnonzero(p >= threshold).tolist()) | {int(p.argmax())}
        for c in sorted(chosen):
            members[c].append(row)
    return [m for m in members if m]


# -- summaries --------------------------------------------------------------------------------------
def extractive_summary(texts: Sequence[str], vectors: np.ndarray, sentences: int) -> str:
    """The lead sentence of each of the ``sentences`` members nearest the cluster centre."""
    from ..models.sentences import sentence_ranges

    centre = vectors.mean(axis=0)
    norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(centre) or 1.0)
    closeness = vectors @ centre / np.where(norms == 0, 1.0, norms)
    picked = []
    for i in np.argsort(-closeness, kind="stable")[:sentences]:
        text = texts[int(i)]
        ranges = sentence_ranges(text, 0, len(text), "regex")
        # The lead sentence, skipping a title or heading line (fewer than 6 words).
        lead = next((text[a:b] for a, b in ranges if len(text[a:b].split()) >= 6), text[:300])
        picked.append(lead)
    return " ".join(p.strip() for p in picked if p.strip())


def llm_summary(llm: LLM, texts: Sequence[str], max_tokens: int, budget_chars: int = 6000) -> str:
    share = max(200, budget_chars // max(len(texts), 1))
    passages = "\n\n".join(f"- {t[:share].strip()}" for t in texts[: max(1, budget_chars // 200)])
    return llm.complete(_SUMMARY_PROMPT % passages, max_tokens=max_tokens).strip()


class Summarizer:
    def __init__(self, config: RaptorConfig, llm: Callable[[], LLM]) -> None:
        self.config = config
        self._llm = llm

    def __call__(self, texts: Sequence[str], vectors: np.ndarray) -> str:
        if self.config.summarizer == "llm":
            summary = llm_summary(self._llm(), texts, self.config.summary_tokens)
            if summary:
                return summary
        return extractive_summary(texts, vectors, self.config.summary_sentences)


# -- the tree in the index database --------------------------------------------------------------------
class Tree:
    def __init__(self, store_tables: Tables) -> None:
        self.tables = store_tables

    def nodes(self) -> list[Node]:
        return [Node(i, lvl, text, json.loads(ch), json.loads(lv), np.frombuffer(v, dtype=np.float32), bool(d))
                for i, lvl, text, ch, lv, v, d in self.tables.execute(
                    "SELECT id, level, text, children, leaves, vector, dirty FROM raptor_nodes ORDER BY level, id")]

    def save(self, nodes: Sequence[Node], delete: Sequence[str] = ()) -> None:
        with self.tables.transaction() as db:
            db.executemany("DELETE FROM raptor_nodes WHERE id = ?", [(i,) for i in delete])
            db.upsert(
                "raptor_nodes", ("id", "level", "text", "children", "leaves", "vector", "dirty"), ("id",),
                [(n.id, n.level, n.text, json.dumps(n.children), json.dumps(n.leaves),
                  np.asarray(n.vector, dtype=np.float32).tobytes(), int(n.dirty)) for n in nodes])
            self._bump()

    def clear(self) -> None:
        with self.tables.transaction() as db:
            db.execute("DELETE FROM raptor_nodes")
            self._bump()

    def _bump(self) -> None:
        meta = self.meta()
        meta["version"] = int(meta.get("version", 0)) + 1
        self.tables.cache(meta, *_META)

    def meta(self) -> dict[str, Any]:
        return self.tables.cached(*_META) or {}

    def set_meta(self, **values: Any) -> None:
        self.tables.cache({**self.meta(), **values}, *_META)

    def leaves(self) -> dict[str, tuple[str, str]]:
        """Leaf chunk id -> (source, content hash)."""
        return {c: (s, h) for c, s, h in self.tables.execute("SELECT chunk_id, source, content_hash FROM raptor_leaves")}

    def counts(self) -> dict[str, Any]:
        levels = dict(self.tables.execute("SELECT level, COUNT(*) FROM raptor_nodes GROUP BY level").fetchall())
        dirty = int(self.tables.execute("SELECT COUNT(*) FROM raptor_nodes WHERE dirty = 1").fetchone()[0])
        leaves = int(self.tables.execute("SELECT COUNT(*) FROM raptor_leaves").fetchone()[0])
        meta = self.meta()
        built = int(meta.get("built_leaves", 0))
        return {"levels": {int(k): v for k, v in levels.items()}, "nodes": sum(levels.values()), "dirty": dirty,
                "leaves": leaves, "leaves_at_build": built, "leaves_changed_since_build": int(meta.get("changed", 0)),
                "built_at": meta.get("built_at")}


def node_id(level: int, children: Sequence[str]) -> str:
    return "raptor:" + sha256_hex("raptor", level, *sorted(children))[:32]


def build_levels(
    leaf_ids: Sequence[str], leaf_texts: Sequence[str], leaf_vectors: np.ndarray, config: RaptorConfig,
    summarize: Callable[[Sequence[str], np.ndarray], str], embed: Callable[[list[str]], np.ndarray],
) -> list[Node]:
    """Every summary node above these leaves, level by level."""
    ids, texts, vectors = list(leaf_ids), list(leaf_texts), np.asarray(leaf_vectors, dtype=np.float32)
    leaves_of: dict[str, list[str]] = {i: [i] for i in ids}
    built: list[Node] = []
    for level in range(1, config.max_levels + 1):
        if len(ids) <= config.stop_below:
            break
        groups = gmm_clusters(vectors, config.max_clusters, config.threshold, config.seed, config.umap,
                              config.cluster_size)
        if len(groups) >= len(ids):  # no grouping happened
            break
        summaries = [summarize([texts[i] for i in g], vectors[g]) for g in groups]
        summary_vectors = embed(summaries)
        layer = []
        for group, summary, vector in zip(groups, summaries, summary_vectors):
            children = [ids[i] for i in group]
            leaves = list(dict.fromkeys(leaf for c in children for leaf in leaves_of[c]))
            node = Node(node_id(level, children), level, summary, children, leaves, np.asarray(vector, np.float32))
            leaves_of[node.id] = leaves
            layer.append(node)
        built.extend(layer)
        ids, texts = [n.id for n in layer], [n.text for n in layer]
        vectors = np.stack([n.vector for n in layer])
        if len(layer) == 1:
            break
    return built


# -- upkeep ------------------------------------------------------------------------------------------
def _leaf_data(parts: IndexParts, leaf_ids: Sequence[str]) -> tuple[list[str], list[str], np.ndarray]:
    chunks = parts.store.get_chunks(list(leaf_ids))
    found = parts.store.cached_vectors([c.content_hash for c in chunks])
    kept = [c for c in chunks if c.content_hash in found]
    vectors = (np.stack([found[c.content_hash] for c in kept]) if kept
               else np.zeros((0, parts.embedder.dimension), np.float32))
    return [c.id for c in kept], [c.text for c in kept], vectors


def _summarizer(parts: IndexParts) -> Summarizer:

    return Summarizer(parts.config.raptor, lambda: knowledge_llm(parts))


def rebuild(parts: IndexParts) -> dict[str, Any]:
    """Re-cluster and re-summarise the whole tree from the current leaves."""
    store_tables = tables(parts.store)
    _sync_leaves(parts, store_tables)
    tree = Tree(store_tables)
    started = time.perf_counter()
    ids, texts, vectors = _leaf_data(parts, list(tree.leaves()))
    nodes = build_levels(ids, texts, vectors, parts.config.raptor, _summarizer(parts),
                         lambda t: parts.embedder.embed_documents(t))
    tree.clear()
    tree.save(nodes)
    tree.set_meta(built_leaves=len(ids), changed=0, built_at=time.time(), seconds=time.perf_counter() - started)
    return tree.counts()


def _sync_leaves(parts: IndexParts, store_tables: Tables) -> tuple[set[str], set[str]]:
    """Leaves follow the sources; return (leaf ids gone, leaf ids new)."""
    db = store_tables
    sources = {r.path: r.content_hash for r in parts.store.list_sources()}
    have = dict(db.execute("SELECT path, content_hash FROM raptor_sources").fetchall())
    gone: set[str] = set()
    new: set[str] = set()
    for path in sorted(p for p in set(have) | set(sources) if have.get(p) != sources.get(p)):
        chunks = source_chunks(parts, path) if path in sources else []
        with store_tables.transaction():
            gone |= {r[0] for r in db.execute("SELECT chunk_id FROM raptor_leaves WHERE source = ?", (path,))}
            db.execute("DELETE FROM raptor_leaves WHERE source = ?", (path,))
            db.upsert("raptor_leaves", ("chunk_id", "source", "content_hash"), ("chunk_id",),
                      [(c.id, path, c.content_hash) for c in chunks])
            if path in sources:
                db.upsert("raptor_sources", ("path", "content_hash"), ("path",), [(path, sources[path])])
            else:
                db.execute("DELETE FROM raptor_sources WHERE path = ?", (path,))
        new |= {c.id for c in chunks}
    return gone - new, new - gone


def sync_raptor(parts: IndexParts, store_tables: Tables) -> list[str]:
    """Leaves follow the sources; clusters they left or joined are re-summarised."""
    tree = Tree(store_tables)
    gone, new = _sync_leaves(parts, store_tables)
    nodes = tree.nodes()
    if not nodes:
        if parts.config.raptor.enabled and tree.leaves():
            rebuild(parts)
        return []
    if not gone and not new and not any(n.dirty for n in nodes):
        return []
    config, meta = parts.config.raptor, tree.meta()
    churn = int(meta.get("changed", 0)) + len(gone) + len(new)
    built = max(int(meta.get("built_leaves", 0)), 1)
    if config.enabled and config.rebuild_after and churn > config.rebuild_after * built:
        rebuild(parts)
        return [f"RAPTOR tree re-clustered: {churn} chunks came or went since its last full build over {built} "
                f"(raptor.rebuild_after: {config.rebuild_after:g})"]
    by_id = {n.id: n for n in nodes}
    parent_of = {c: n.id for n in nodes for c in n.children}
    for node in nodes:
        kept = [c for c in node.children if c not in gone]
        if len(kept) != len(node.children) or any(leaf in gone for leaf in node.leaves):
            node.children, node.dirty = kept, True
            node.leaves = [leaf for leaf in node.leaves if leaf not in gone]
    level_one = [n for n in nodes if n.level == 1]
    if new and level_one:
        ids, _, vectors = _leaf_data(parts, sorted(new))
        centres = np.stack([n.vector for n in level_one])
        for leaf, nearest in zip(ids, (vectors @ centres.T).argmax(axis=1)):
            node = level_one[int(nearest)]
            node.children.append(leaf)
            node.dirty = True
            ancestor: Node | None = node
            while ancestor is not None:
                ancestor.leaves.append(leaf)
                ancestor.dirty = True
                ancestor = by_id.get(parent_of.get(ancestor.id, ""))
    for node in nodes:  # a dirty node's parent must be re-summarised too
        if node.dirty and node.id in parent_of:
            by_id[parent_of[node.id]].dirty = True
    _resummarise(parts, tree, nodes, by_id, parent_of)
    tree.set_meta(changed=int(tree.meta().get("changed", 0)) + len(gone) + len(new))
    return []


def _resummarise(parts: IndexParts, tree: Tree, nodes: list[Node], by_id: dict[str, Node], parent_of: dict[str, str]) -> None:
    summarize = _summarizer(parts)
    delete: list[str] = []
    for level in sorted({n.level for n in nodes}):
        for node in [n for n in nodes if n.level == level and n.dirty]:
            node.children = [c for c in node.children if c not in delete]
            if not node.children:
                delete.append(node.id)
                if node.id in parent_of:
                    by_id[parent_of[node.id]].dirty = True
                continue
            if level == 1:
                _, texts, vectors = _leaf_data(parts, node.children)
            else:
                kids = [by_id[c] for c in node.children if c in by_id]
                texts, vectors = [k.text for k in kids], np.stack([k.vector for k in kids])
            if not texts:
                delete.append(node.id)
                continue
            node.text = summarize(texts, vectors)
            node.vector = parts.embedder.embed_documents([node.text])[0]
            node.dirty = False
    tree.save([n for n in nodes if n.id not in delete], delete)


def raptor_state(parts: IndexParts) -> StructureState:

    state = StructureState(built=has_table_rows(parts, "raptor_nodes"), enabled=parts.config.raptor.enabled)
    if not (state.built or has_table_rows(parts, "raptor_sources")):
        return state
    store_tables = tables(parts.store)
    sources = {r.path: r.content_hash for r in parts.store.list_sources()}
    have = dict(store_tables.execute("SELECT path, content_hash FROM raptor_sources").fetchall())
    state.stale_sources = sorted(p for p, h in sources.items() if have.get(p) != h)
    state.removed_sources = sorted(set(have) - set(sources))
    state.counts = Tree(store_tables).counts()
    return state


# -- retrieval view ------------------------------------------------------------------------------------
@dataclass
class TreeView:
    """The summary nodes as one matrix, for the collapsed-tree search."""

    version: int
    nodes: list[Node]
    matrix: np.ndarray

    def search(self, vector: np.ndarray, k: int) -> list[tuple[Node, float]]:
        if not self.nodes:
            return []
        scores = self.matrix @ (vector / (np.linalg.norm(vector) or 1.0))
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.nodes[int(i)], float(scores[int(i)])) for i in top]


#: Each open store's tree as the retriever reads it, reloaded when its version moves on.
_VIEWS: weakref.WeakKeyDictionary[Store, TreeView] = weakref.WeakKeyDictionary()


def tree_view(index_store: Store) -> TreeView:
    """The tree of this store, loaded once and again only after it changed."""
    if not has_table_rows_in(index_store, "raptor_nodes"):
        raise MissingStructureError(
            "this index has no RAPTOR tree; build it with `ragloom ingest --raptor PATH` "
            "(or set raptor.enabled: true in ragloom.yaml and ingest), or `ragloom raptor rebuild`"
        )
    tree = Tree(tables(index_store))
    version = int(tree.meta().get("version", 0))
    cached = _VIEWS.get(index_store)
    if cached is None or cached.version != version:
        nodes = tree.nodes()
        matrix = np.stack([n.vector for n in nodes]).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        cached = TreeView(version, nodes, matrix / np.where(norms == 0, 1.0, norms))
        _VIEWS[index_store] = cached
    return cached
