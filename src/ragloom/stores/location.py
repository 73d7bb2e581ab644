"""Where an index is: a local directory, or a database URL that names a server-held index.

``--index DIR`` (or ``index:`` in ragloom.yaml) is a folder; ``--index postgresql://...?index=NAME``
is an index of the postgres store, and then the process keeps only caches on its own disk, in
a folder of the temporary directory named after the address (never the password).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from ..config import Config
from .postgres.address import is_postgres_url, mask_password


def is_remote(index: str | Path | None) -> bool:
    """Whether ``index`` names an index held by a server (a database URL), not a folder."""
    return is_postgres_url(str(index)) if index is not None else False


def locate(index: str | Path | None, config: Config) -> tuple[Path, Config]:
    """The local folder of ``index`` (default: the config's) and the config that opens it."""
    given = str(index) if index is not None else config.index
    if not is_postgres_url(given):
        return Path(given).expanduser(), config
    store = config.store.model_copy(update={
        "backend": "postgres", "postgres": config.store.postgres.model_copy(update={"url": given})})
    located = config.model_copy(update={"store": store, "index": given})
    return cache_folder(given), located


def cache_folder(address: str) -> Path:
    """The local folder of a server-held index: caches, and the files uploaded to it. The same
    path on every machine (the system's temporary folder, named after the address), since an
    uploaded file's path is its source id: every replica must write it where the others do."""
    digest = hashlib.sha256(mask_password(address).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"ragloom-{digest}"


def shown(index: str | Path) -> str:
    """An index as a user may see it (a URL's password masked)."""
    return mask_password(str(index)) if is_remote(index) else str(index)
