"""One embedder per model in a process, shared by every index that embeds with it.

A server holding three indexes of the same model loaded it three times, each with its own ONNX
sessions (one per core): the query embeddings of three models competed for two cores, and three
indexes served 0.71x the searches of one (BENCHMARKS.md, issue 24). Shared, the sessions of one
``SessionPool`` bound the model's runs to the cores whichever index asks. An embedder is
already used by several threads at once (a server's readers share it), so sharing it between
indexes asks nothing new of it.

Embedders are counted by their users: the last ``release`` closes it, so closing one index
never closes a model another index still embeds with.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..config import EmbedderConfig
from .base import Embedder, create_embedder

#: Settings that change how fast an embedder runs, not its vectors: the first index to load a
#: model chooses them for every index that shares it.
RUNTIME_KNOBS = frozenset({"threads", "sessions", "batch_size"})


@dataclass
class _Shared:
    embedder: Embedder
    users: int


_SHARED: dict[str, _Shared] = {}
# Held while a model loads, so two indexes opening at once load it once.
_LOCK = threading.Lock()


def sharing_key(settings: EmbedderConfig) -> str:
    """What makes two embedders the same: every setting but the runtime knobs."""
    return settings.model_dump_json(exclude=set(RUNTIME_KNOBS))


def acquire(settings: EmbedderConfig) -> Embedder:
    """The process's embedder for ``settings``, loaded on first use; ``release`` it when done."""
    key = sharing_key(settings)
    with _LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = _Shared(create_embedder(settings), 0)
        shared.users += 1
        return shared.embedder


def release(embedder: Embedder) -> None:
    """One user fewer of ``embedder``; the last one closes it."""
    with _LOCK:
        key = next((key for key, shared in _SHARED.items() if shared.embedder is embedder), None)
        if key is None:
            return
        shared = _SHARED[key]
        shared.users -= 1
        if shared.users > 0:
            return
        del _SHARED[key]
    embedder.close()


def users(embedder: Embedder) -> int:
    """How many opened indexes share ``embedder`` (0 for one not shared)."""
    with _LOCK:
        return next((shared.users for shared in _SHARED.values() if shared.embedder is embedder), 0)
