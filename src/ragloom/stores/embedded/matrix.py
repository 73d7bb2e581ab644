"""Exact vector search over the memory-mapped vector file.

The vectors are stored once, in the file ``vectorlog`` describes; the matrix maps each
chunk (SQLite row, ascending) to its slot there. That map is a derived cache stamped with
the generation it was built at; its files carry the generation in their names, so a reader
holding an old map is never handed a half-written file.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..base import Candidate
from .catalog import Catalog

# Gathers of at most this many vectors read the file with pread instead of touching its
# mapped pages: a search process that rescores a few hundred rows per query would otherwise
# keep, over many queries, most of the file's pages mapped and counted in its RSS (at 1M
# chunks the file is 1.5 GB). Larger gathers, and the filtered exact scan, use the mapping.
READ_LIMIT = 4096


class VectorMatrix:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.generation = -1
        self._position_of: tuple[list[str], dict[str, int]] | None = None
        self._reader: RowReader | None = None
        # (rows, ids, slots: each row's slot in ``vectors``, vectors: every slot of the vector file,
        # dead ones too, whether the slots are in order); the attributes below read it.
        self._snapshot: tuple[np.ndarray, list[str], np.ndarray, np.ndarray, bool] = (
            np.zeros(0, dtype=np.int64), [], np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32), True)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def snapshot(self) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, bool]:
        """(rows, ids, slots, vectors, in slot order) of one version, for a search to read throughout."""
        return self._snapshot

    @property
    def rows(self) -> np.ndarray:
        return self._snapshot[0]

    @property
    def ids(self) -> list[str]:
        return self._snapshot[1]

    @property
    def slots(self) -> np.ndarray:
        return self._snapshot[2]

    @property
    def vectors(self) -> np.ndarray:
        return self._snapshot[3]

    # -- persistence ----------------------------------------------------------------------
    def load(self, generation: int, catalog: Catalog) -> bool:
        """Load the saved row map if it was built at ``generation``; False when there is none
        or it is older. Files that cannot be read raise (the caller rebuilds them)."""
        state_file = self.folder / "state.json"
        try:
            state = json.loads(state_file.read_text())
        except FileNotFoundError:
            return False
        if state["generation"] != generation:
            return False
        tag = state["tag"]
        try:
            rows = np.load(self.folder / f"rows.{tag}.npy")
            slots = np.load(self.folder / f"slots.{tag}.npy")
            ids = json.loads((self.folder / f"ids.{tag}.json").read_text())
        except FileNotFoundError:  # a writer replaced them since state.json was read: just stale
            return False
        vectors = catalog.vector_view()
        if rows.ndim != 1 or slots.ndim != 1 or len(rows) != len(ids) or len(rows) != len(slots):
            raise ValueError(f"its files disagree ({len(rows)} rows, {len(ids)} ids, {len(slots)} slots)")
        if len(slots) and slots.max() >= len(vectors):
            return False  # the vector file was compacted since: stale
        self._set(rows, ids, slots, vectors, generation)
        return True

    def build(self, catalog: Catalog, generation: int, dimension: int) -> None:
        rows, ids, slots = [], [], []
        for batch_rows, batch_ids, batch_slots in catalog.iter_slots():
            rows.append(batch_rows)
            ids.extend(batch_ids)
            slots.append(batch_slots)
        # The vector file is mapped after the slots are read: a write meanwhile appends its vectors
        # before it commits their slots, so every slot read is inside the mapping (mapped first, a
        # slot committed during the read pointed past its end: IndexError in a search).
        vectors = catalog.vector_view()
        empty = np.zeros(0, dtype=np.int64)
        if len(vectors) == 0:
            vectors = np.zeros((0, dimension), dtype=np.float32)
        self._set(np.concatenate(rows) if rows else empty, ids, np.concatenate(slots) if slots else empty,
                  vectors, generation)

    def _set(self, rows: np.ndarray, ids: list[str], slots: np.ndarray, vectors: np.ndarray, generation: int) -> None:
        in_order = len(slots) == len(vectors) and bool(np.all(slots == np.arange(len(slots))))
        # A search reads ``_snapshot`` once: a refresh on another thread (a server searching while
        # it ingests) replaces it whole, so rows, ids, slots and vectors never come from two versions.
        self._snapshot = (rows, ids, slots, vectors, in_order)
        self.generation = generation
        self._position_of = None
        if self._reader is None or self._reader.vectors is not vectors:
            self._reader = RowReader(vectors) if isinstance(vectors, np.memmap) else None

    def at(self, positions: np.ndarray, snapshot: tuple | None = None) -> np.ndarray:
        """Vectors of the rows at these matrix positions (a copy)."""
        _, _, all_slots, vectors, _ = snapshot or self._snapshot
        slots = all_slots[positions]
        reader = self._reader
        if reader is not None and reader.vectors is vectors and len(slots) <= READ_LIMIT:
            return reader.read(slots)
        return np.asarray(vectors[slots], dtype=np.float32)

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tag = f"{self.generation}-{os.getpid()}"
        rows, ids, slots, _, _ = self._snapshot
        np.save(self.folder / f"rows.{tag}.npy", rows)
        np.save(self.folder / f"slots.{tag}.npy", slots)
        (self.folder / f"ids.{tag}.json").write_text(json.dumps(ids))
        state_tmp = self.folder / f"state.{tag}.tmp"
        state_tmp.write_text(json.dumps({"generation": self.generation, "tag": tag}))
        os.replace(state_tmp, self.folder / "state.json")
        for old in self.folder.iterdir():
            if old.suffix in (".npy", ".json", ".tmp") and old.name != "state.json" and f".{tag}." not in old.name:
                old.unlink(missing_ok=True)

    # -- search ---------------------------------------------------------------------------
    def positions(self, rows: np.ndarray, matrix_rows: np.ndarray | None = None) -> np.ndarray:
        """Matrix positions of these SQLite rows (sorted); rows not in the matrix are dropped."""
        known = self.rows if matrix_rows is None else matrix_rows
        if len(known) == 0 or len(rows) == 0:
            return np.zeros(0, dtype=np.int64)
        pos = np.clip(np.searchsorted(known, rows), 0, len(known) - 1)
        return pos[known[pos] == rows]

    def search(self, query: np.ndarray, k: int, allowed_rows: np.ndarray | None = None) -> list[Candidate]:
        rows, ids, slots, vectors, in_order = self._snapshot
        if len(rows) == 0 or k <= 0:
            return []
        query = np.asarray(query, dtype=np.float32)
        if allowed_rows is None:
            positions = None
            scores = cosine(vectors, query)  # one pass over the file; dead slots cost a little
            if not in_order:
                scores = scores[slots]
        else:
            positions = self.positions(allowed_rows, rows)
            if len(positions) == 0:
                return []
            # Through the mapping: a filtered scan reads the same allowed rows query after query.
            scores = cosine(np.asarray(vectors[slots[positions]], dtype=np.float32), query)
        chosen = top_k_indices(scores, k)
        chosen_pos = chosen if positions is None else positions[chosen]
        candidates = [Candidate(ids[int(p)], float(scores[int(i)])) for i, p in zip(chosen, chosen_pos)]
        candidates.sort(key=lambda c: (-c.score, c.chunk_id))
        return candidates[:k]

    def scores_for_ids(self, query: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        snapshot = self._snapshot
        ids = snapshot[1]
        cached = self._position_of
        if cached is None or cached[0] is not ids:
            cached = self._position_of = (ids, {cid: i for i, cid in enumerate(ids)})
        position_of = cached[1]
        found = [(cid, position_of[cid]) for cid in chunk_ids if cid in position_of]
        if not found:
            return {}
        scores = cosine(self.at(np.array([p for _, p in found]), snapshot), np.asarray(query, dtype=np.float32))
        return {cid: float(s) for (cid, _), s in zip(found, scores)}


class RowReader:
    """Reads slots of a memory-mapped vector file with pread, through a descriptor opened
    with the mapping (so a compaction that unlinks the file does not take it away)."""

    def __init__(self, vectors: np.memmap) -> None:
        self.vectors = vectors
        self.row_bytes = vectors.shape[1] * vectors.dtype.itemsize
        self.offset = vectors.offset
        self.fd = os.open(vectors.filename, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)

    def read(self, slots: np.ndarray) -> np.ndarray:
        out = np.empty((len(slots), self.vectors.shape[1]), dtype=np.float32)
        buffer = memoryview(out.reshape(-1).view(np.uint8))
        size, base, fd = self.row_bytes, self.offset, self.fd
        for i, slot in enumerate(slots.tolist()):
            if os.preadv(fd, [buffer[i * size : (i + 1) * size]], base + slot * size) != size:
                raise ValueError(f"the vector file {self.vectors.filename} is shorter than its committed slots")
        return out


def cosine(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of unit vectors, rounded to 6 decimals.

    BLAS kernels may differ in the last bits for identical rows at different offsets;
    rounding below float32 precision makes equal vectors tie exactly, so the chunk-id
    tie-break decides their order.
    """
    return np.round(vectors @ query, 6)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best scores, plus any that tie with the k-th (sorted later by id)."""
    n = len(scores)
    if k >= n:
        return np.arange(n)
    kth = np.partition(scores, n - k)[n - k]
    return np.nonzero(scores >= kth)[0]
