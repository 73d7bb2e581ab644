"""The one copy of an index's vectors: an append-only float32 file, memory-mapped for search.

SQLite says which part of the file is real: ``meta.vector_file`` names the file,
``meta.vector_slots`` how many slots (rows of ``dimension`` float32) are committed, and
``embeddings`` maps each content hash to its slot and a CRC-32 of its bytes. A write appends
after the committed slots *inside* the SQLite transaction that records them, so a process
killed at any moment leaves either a committed write whose bytes are in the file, or bytes
past ``vector_slots`` that nothing references and the next write overwrites. Slots are never
rewritten in place: deleted vectors leave dead slots until ``compact`` copies the live ones
to a new file, which one transaction switches to. Each vector's CRC-32 lets a reader of the
embedding cache tell a damaged slot from a good one.
"""

from __future__ import annotations

import errno
import os
import zlib
from pathlib import Path

import numpy as np

from ...errors import DiskFullError, StoreError

PREFIX = "vectors-"
SUFFIX = ".f32"


def file_name(epoch: int) -> str:
    return f"{PREFIX}{epoch}{SUFFIX}"


def epoch_of(name: str) -> int:
    return int(name[len(PREFIX) : -len(SUFFIX)])


def checksum(vector: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(vector, dtype=np.float32).tobytes())


def append(path: Path, committed: int, vectors: np.ndarray) -> np.ndarray:
    """Write ``vectors`` at slots committed, committed+1, ...; return those slots."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if len(vectors) == 0:
        return np.zeros(0, dtype=np.int64)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        data = vectors.tobytes()
        if os.pwrite(fd, data, committed * vectors.shape[1] * 4) < len(data):  # a disk that just filled up
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        # On disk before SQLite's commit can be: a power cut never leaves a committed slot unwritten.
        os.fdatasync(fd)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:  # the slots past the committed ones are trimmed at the next open
            raise DiskFullError(f"the index at {path.parent}") from None
        raise
    finally:
        os.close(fd)
    return np.arange(committed, committed + len(vectors), dtype=np.int64)


def open_view(path: Path, slots: int, dimension: int) -> np.ndarray:
    """The committed slots, memory-mapped read-only (the page cache holds them, not the heap)."""
    if slots == 0 or dimension == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    try:
        return np.memmap(path, dtype=np.float32, mode="r", shape=(slots, dimension))
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"the vector file {path} is missing or shorter than the database says ({slots} vectors): {exc}. "
            "Re-ingest into a new index directory."
        ) from None


def trim(path: Path, slots: int, dimension: int) -> None:
    """Drop bytes past the committed slots (left by a write that never committed)."""
    size = slots * dimension * 4
    if path.exists() and path.stat().st_size > size:
        os.truncate(path, size)


def stale_files(folder: Path, current: str) -> list[Path]:
    """Vector files that SQLite does not name: a compaction's old file, or an unfinished new one."""
    return [p for p in folder.glob(f"{PREFIX}*{SUFFIX}") if p.name != current]
