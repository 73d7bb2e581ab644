"""The opened parts of one index: its folder, config, store, embedder and loaded models.

``Index`` opens a :class:`Parts` and hands it (or the two or three things a step needs
from it) to the ingest runner, the search pipeline, answering and knowledge sync, so none
of them imports ``Index`` back. Models that take time to load (cross-encoders, LLMs) are
kept by ``component(key, factory)``, once per index. The embedder is shared by the indexes of
one process that use the same model (``embed/shared.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from .config import Config, EmbedderConfig
from .embed import shared
from .embed.base import Embedder, is_default_embedder
from .errors import IndexNotFoundError, ModelMismatchError, RagloomError
from .stores.base import Store, create_store, exclusive_write_lock, store_exists
from .stores.location import is_remote, locate, shown


class IndexParts(Protocol):
    """What the layers below the facade may use of an index (``Parts`` and ``Index`` both are one)."""

    path: Path
    config: Config
    store: Store

    @property
    def embedder(self) -> Embedder: ...

    def component(self, key: str, factory: Callable[[], Any]) -> Any: ...

    def use_embedder(self, settings: EmbedderConfig) -> None: ...


class Parts:
    """An index's parts, opened once and closed together."""

    def __init__(self, path: Path, config: Config, store: Store, embedder: Embedder | None = None) -> None:
        self.path = path
        self.config = config
        self.store = store
        self._embedder: Embedder | None = None
        self._owns_embedder = embedder is None  # one passed in is the caller's to close
        if embedder is not None:
            recorded = store.embedder_info()
            if recorded:
                check_same_embedder(recorded, embedder, path)
            self._embedder = embedder
        #: Models and clients loaded once per index (cross-encoders, LLMs, ...).
        self.components: dict[str, Any] = {}

    @property
    def embedder(self) -> Embedder:
        """The embedder this index was built with (or, for a new index, the configured one)."""
        if self._embedder is None:
            recorded = self.store.embedder_info()
            explicit = "embedder" in self.config.model_fields_set and not is_default_embedder(self.config.embedder)
            if recorded and not explicit and recorded.get("config"):
                settings = EmbedderConfig.model_validate(recorded["config"])
                # Runtime knobs may differ from the recorded ones without changing the vectors.
                settings = settings.model_copy(update={
                    "threads": self.config.embedder.threads, "sessions": self.config.embedder.sessions,
                    "batch_size": self.config.embedder.batch_size})
            else:
                settings = self.config.embedder
            embedder = shared.acquire(settings)  # one per model in the process (``embed/shared.py``)
            try:
                if recorded:
                    check_same_embedder(recorded, embedder, self.path)
            except BaseException:
                shared.release(embedder)
                raise
            self._embedder = embedder
        return self._embedder

    def use_embedder(self, settings: EmbedderConfig) -> None:
        """Embed with ``settings`` instead of the configured embedder: for a new index only, whose
        first ingest chose the model (``ingest/languages.py``); the index records it. An embedder
        the caller passed in stands."""
        if self.store.embedder_info() is not None:
            raise RagloomError(f"the index at {self.path} already records its embedder")
        if not self._owns_embedder:
            return
        if self._embedder is not None:
            shared.release(self._embedder)
        self._embedder, self._owns_embedder = None, True
        self.config = self.config.model_copy(update={"embedder": settings})

    def component(self, key: str, factory: Callable[[], Any]) -> Any:
        """A shared model or client, built by ``factory`` the first time ``key`` is asked for."""
        if key not in self.components:
            self.components[key] = factory()
        return self.components[key]

    def close(self) -> None:
        for component in self.components.values():
            closer = getattr(component, "close", None)
            if callable(closer):
                closer()
        self.components.clear()
        if self._owns_embedder and self._embedder is not None:
            shared.release(self._embedder)  # closed by its last user
            self._embedder = None
        self.store.close()


def open_parts(
    path: str | Path | None, config: Config | None, *, create: bool, embedder: Embedder | None,
    read_only: bool | None,
) -> Parts:
    """The parts of the index at ``path`` (see ``Index.open`` for what the arguments mean)."""
    folder, config = locate(path, config or Config())
    if folder.exists() and not folder.is_dir():
        raise RagloomError(f"{folder} is a file, not an index directory; pick another --index path")
    if not create and not store_exists(folder, config):
        what = "no index" if not folder.exists() else f"no ragloom index (of the {config.store.backend} store)"
        where = shown(config.index) if is_remote(config.index) else folder
        raise IndexNotFoundError(
            f"there is {what} at {where}; create one with `ragloom ingest PATH` (or pass --index DIR)"
        )
    if read_only is None:
        read_only = not create and not is_remote(config.index) and not _writable(folder)
    store = create_store(folder, config, read_only=read_only)
    try:
        return Parts(folder, config, store, embedder)
    except BaseException:
        store.close()
        raise


def check_same_embedder(recorded: Mapping[str, Any], embedder: Embedder, path: Path) -> None:
    # Compare names first: learning a remote model's dimension may need a request.
    same = recorded.get("model_id") == embedder.model_id and int(recorded.get("dimension", 0)) == embedder.dimension
    if not same:
        configured = embedder.model_id
        if recorded.get("model_id") == embedder.model_id:
            configured += f" returning {embedder.dimension}-d vectors"
        raise ModelMismatchError(
            f"the index at {path} was built with {recorded.get('model_id')} ({recorded.get('dimension')}-d vectors), "
            f"but the configured embedder is {configured}. Use the same embedder, "
            "or ingest into a new index directory (--index DIR)."
        )


def set_aside_index(folder: str | Path) -> Path | None:
    """Move a (damaged) index folder aside, to ``<folder>.damaged-<time>``, so the next ingest
    builds it anew; return where it went, or None when there was nothing there.

    A Chroma or Qdrant *server* collection is not touched: only the local files move.
    """
    folder = Path(folder).expanduser()
    if not folder.exists():
        return None
    target = folder.with_name(f"{folder.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    with exclusive_write_lock(folder):
        folder.rename(target)
    return target


def _writable(folder: Path) -> bool:
    """Whether this user may write the index folder and the files in it."""
    if not os.access(folder, os.W_OK):
        return False
    catalogs = [*folder.glob("ragloom.sqlite"), *folder.glob("*/ragloom.sqlite")]
    return all(os.access(entry, os.W_OK) and os.access(entry.parent, os.W_OK) for entry in catalogs)
