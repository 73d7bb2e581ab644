"""API keys and the folders ingest may read from."""

from __future__ import annotations

import hmac
import os
from collections.abc import Sequence
from pathlib import Path

from ..config import ServerConfig
from ..ingest.files import walk
from ..paths import PathError, PathPolicy
from .errors import ApiError

API_KEY_ENV = "RAGLOOM_API_KEY"


def configured_key(settings: ServerConfig) -> str | None:
    """The API key: ``server.api_key``, else $RAGLOOM_API_KEY; None when neither is set."""
    return settings.api_key or os.environ.get(API_KEY_ENV) or None


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request sends, as ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``."""
    if x_api_key:
        return x_api_key
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return None


def check_key(expected: str | None, presented: str | None, *, write: bool) -> None:
    """Raise ApiError unless ``presented`` is the expected key (compared in constant time)."""
    if expected is None:
        if write:
            raise ApiError(403, "writes_disabled",
                           f"this server accepts no writes: set {API_KEY_ENV} (or server.api_key) and restart it")
        return
    if presented is None:
        raise ApiError(401, "unauthorized", "send the API key as `Authorization: Bearer KEY` or `X-API-Key: KEY`")
    if not hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8")):
        raise ApiError(401, "unauthorized", "the API key is wrong")


def allowed_paths(settings: ServerConfig) -> PathPolicy:
    """What ingest by path may read, through either door (HTTP or MCP)."""
    return PathPolicy(settings.allowed_roots, what="server.allowed_roots")


def accept_paths(policy: PathPolicy, raws: Sequence[str], glob: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """The paths a request names, resolved inside the roots; PathError (a 4xx) for the first that is not.

    A folder holding a symlink that leads outside the roots is refused whole, so the caller
    learns at once; the ingest still checks every file again where it opens it.
    """
    accepted = [policy.resolve(raw) for raw in raws]
    for path in accepted:
        if path.is_dir():
            _refuse_links_out(path, policy, glob, exclude)
    return [str(path) for path in accepted]


def _refuse_links_out(folder: Path, policy: PathPolicy, glob: Sequence[str], exclude: Sequence[str]) -> None:
    def refused(where: str, why: str) -> None:
        raise PathError("path_not_allowed", f"{where}: {why}; remove the link or ingest files one by one", status=403)

    # Other problems (a symlink loop, an unreadable sub-folder) are the ingest's to report.
    for _ in walk(folder, list(glob), list(exclude), on_error=lambda where, why: None, policy=policy,
                  on_refused=refused):
        pass
