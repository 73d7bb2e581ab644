"""An approximate dense index (faiss IVF) over the vector matrix, for stores past a size threshold.

Like the matrix it is a derived cache, stamped with the generation it caught up with. It is
keyed by SQLite row, and a row's vector never changes (a replaced chunk gets a new row), so an
index saved at any earlier generation is brought up to date by removing the rows SQLite no
longer holds and adding the new ones: no retraining. It is retrained when the store has grown
or shrunk by half since training (the lists' centroids describe the data they were trained
on), and on ``ragloom index optimize``. IVF removes deleted entries from its lists, so there
is no tombstone garbage to collect.

Candidates are rescored from the exact matrix, so a hit's score is the one exact search gives;
only which rows are looked at is approximate. A filter is applied inside the search (a bitmap
over rows), with more lists probed the fewer rows it keeps.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...optional import require
from ..base import Candidate
from .matrix import VectorMatrix, cosine, top_k_indices
from .options import AnnConfig

# Retrain when the store has grown or shrunk this many times since the lists were trained.
RETRAIN_FACTOR = 2.0
# Rewrite the saved index once this share of its rows changed since it was saved (at 1M chunks
# the file is ~0.4 GB); until then a process that opens it catches it up in memory.
SAVE_SHARE = 0.01


def faiss_module() -> Any:
    return require("faiss", extra="ann", feature="the approximate vector index", package="faiss-cpu")


def list_count(n: int) -> int:
    """IVF lists for ``n`` vectors: 2·√n, so a list holds ~√n/2 vectors."""
    return max(1, min(n // 39, int(2 * math.sqrt(n))))


class AnnIndex:
    def __init__(self, folder: Path, settings: AnnConfig) -> None:
        self.folder = folder
        self.settings = settings
        self.index: Any = None
        self.rows = np.zeros(0, dtype=np.int64)  # ascending: the rows the index holds
        self.generation = -1
        self.trained_size = 0
        self.unsaved = 0  # rows added or removed since the saved file
        self._bitmap: tuple[np.ndarray, np.ndarray] | None = None  # (allowed rows, their bitmap)

    @property
    def ready(self) -> bool:
        return self.index is not None

    # -- persistence ----------------------------------------------------------------------
    def load(self) -> bool:
        """Load the saved index, whatever its generation (``sync`` brings it up to date)."""
        try:
            state = json.loads((self.folder / "state.json").read_text())
            tag = state["tag"]
            rows = np.load(self.folder / f"rows.{tag}.npy")
            index = faiss_module().read_index(str(self.folder / f"ivf.{tag}.faiss"))
        except (OSError, ValueError, KeyError, RuntimeError):
            return False
        if index.ntotal != len(rows) or state.get("codec") != self.settings.codec:
            return False
        self.index, self.rows = index, rows
        self.generation, self.trained_size = int(state["generation"]), int(state["trained_size"])
        self.unsaved = 0
        return True

    @property
    def worth_saving(self) -> bool:
        return self.unsaved > SAVE_SHARE * max(len(self.rows), 1)

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tag = f"{self.generation}-{os.getpid()}"
        faiss_module().write_index(self.index, str(self.folder / f"ivf.{tag}.faiss"))
        np.save(self.folder / f"rows.{tag}.npy", self.rows)
        state = {"generation": self.generation, "tag": tag, "trained_size": self.trained_size,
                 "codec": self.settings.codec}
        tmp = self.folder / f"state.{tag}.tmp"
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.folder / "state.json")
        for old in self.folder.iterdir():
            if old.name != "state.json" and f".{tag}." not in old.name:
                old.unlink(missing_ok=True)
        self.unsaved = 0

    def drop(self) -> None:
        """Forget the index (the store shrank below the threshold) and its files."""
        self.index, self.rows, self.generation, self.trained_size = None, np.zeros(0, dtype=np.int64), -1, 0
        if self.folder.is_dir():
            for old in self.folder.iterdir():
                old.unlink(missing_ok=True)

    # -- upkeep ---------------------------------------------------------------------------
    def needs_training(self, n: int) -> bool:
        if self.index is None:
            return True
        return n > RETRAIN_FACTOR * self.trained_size or n * RETRAIN_FACTOR < self.trained_size

    def build(self, matrix: VectorMatrix) -> None:
        """Train the lists on (a sample of) the matrix and add every row."""
        faiss = faiss_module()
        n, dimension = len(matrix), matrix.vectors.shape[1]
        lists = list_count(n)
        index = faiss.index_factory(dimension, f"IVF{lists},{self.settings.codec}", faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = 10  # k-means iterations (faiss: 25): training dominates the build at 1M
        sample = np.random.default_rng(0).choice(n, size=min(n, 48 * lists), replace=False)
        index.train(matrix.at(np.sort(sample)))
        for start in range(0, n, 100_000):  # in slices: the vectors are memory-mapped
            part = np.arange(start, min(start + 100_000, n))
            index.add_with_ids(matrix.at(part), matrix.rows[part])
        self.index, self.rows, self._bitmap = index, matrix.rows.copy(), None
        self.trained_size, self.generation = n, matrix.generation
        self.unsaved = n

    def sync(self, matrix: VectorMatrix) -> tuple[int, int]:
        """Remove rows the matrix no longer holds and add its new ones; return (added, removed)."""
        removed = np.setdiff1d(self.rows, matrix.rows, assume_unique=True)
        added = np.setdiff1d(matrix.rows, self.rows, assume_unique=True)
        if len(removed):
            self.index.remove_ids(removed)
        if len(added):
            self.index.add_with_ids(matrix.at(matrix.positions(added)), added)
        self.rows = matrix.rows.copy()
        self.generation = matrix.generation
        self._bitmap = None
        self.unsaved += len(added) + len(removed)
        return len(added), len(removed)

    def _bitmap_of(self, allowed_rows: np.ndarray) -> np.ndarray:
        """faiss's row bitmap for this filter (the last one is kept: the store reuses the
        allowed-rows array of a repeated filter)."""
        if self._bitmap is not None and self._bitmap[0] is allowed_rows:
            return self._bitmap[1]
        bits = np.zeros(int(self.rows[-1]) + 1, dtype=bool)
        bits[allowed_rows[allowed_rows <= self.rows[-1]]] = True
        bitmap = np.packbits(bits, bitorder="little")
        self._bitmap = (allowed_rows, bitmap)
        return bitmap

    # -- search ---------------------------------------------------------------------------
    def search(
        self, query: np.ndarray, k: int, matrix: VectorMatrix, allowed_rows: np.ndarray | None = None
    ) -> list[Candidate]:
        """Top ``k`` by exact cosine among the rows the IVF lists propose."""
        faiss = faiss_module()
        lists = self.index.nlist
        nprobe = self.settings.nprobe or max(32, lists // 16)
        available = len(self.rows)
        selector = None
        if allowed_rows is not None:
            available = len(allowed_rows)
            if available == 0:
                return []
            # Probe more lists the fewer rows pass: 10% of the rows -> 4x the lists.
            nprobe *= math.ceil(1 / math.sqrt(available / max(len(self.rows), 1)))
            bitmap = self._bitmap_of(allowed_rows)
            selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        fetch = min(max(4 * k, k + 32), available)
        query = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(1, -1))
        while True:
            nprobe = min(nprobe, lists)
            params = faiss.SearchParametersIVF(nprobe=nprobe, sel=selector) if selector is not None \
                else faiss.SearchParametersIVF(nprobe=nprobe)
            _, found = self.index.search(query, fetch, params=params)
            rows = found[0][found[0] >= 0]
            # Too few candidates passed the filter in the lists probed: widen until k do.
            if len(rows) >= min(k, available) or nprobe >= lists:
                break
            nprobe *= 4
        # Rows, positions, vectors and ids from one version of the matrix (a refresh on another
        # thread replaces the snapshot whole).
        snapshot = matrix.snapshot
        positions = np.sort(matrix.positions(np.sort(rows), snapshot[0]))
        if len(positions) == 0:
            return []
        scores = cosine(matrix.at(positions, snapshot), query[0])
        chosen = top_k_indices(scores, k)
        candidates = [Candidate(snapshot[1][int(positions[i])], float(scores[i])) for i in chosen]
        candidates.sort(key=lambda c: (-c.score, c.chunk_id))
        return candidates[:k]
