"""API keys and the folders ingest may read from."""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..config import ServerConfig
from ..ingest.files import walk
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


def resolve_inside(raw: str, roots: Sequence[str]) -> Path:
    """``raw`` resolved (symlinks and ``..`` followed), or ApiError when it is outside every root."""
    if not roots:
        raise ApiError(403, "path_not_allowed",
                       "ingest by path is off: list the folders it may read in server.allowed_roots")
    resolved_roots = [Path(root).expanduser().resolve() for root in roots]
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise ApiError(422, "path_not_absolute", f"{raw}: give an absolute path inside one of the allowed roots")
    resolved = path.resolve()
    if not _inside(resolved, resolved_roots):
        raise ApiError(403, "path_not_allowed", f"{raw} is outside the allowed roots ({', '.join(map(str, resolved_roots))})")
    if not resolved.exists():
        raise ApiError(404, "path_not_found", f"{raw}: no such file or directory")
    return resolved


def check_folder_contents(folder: Path, roots: Sequence[str], glob: Iterable[str], exclude: Iterable[str]) -> None:
    """Refuse a folder holding a symlink that leads outside the allowed roots."""
    resolved_roots = [Path(root).expanduser().resolve() for root in roots]
    for file in walk(folder, list(glob), list(exclude), on_error=lambda path, problem: None):
        if not _inside(file.resolve(), resolved_roots):
            raise ApiError(403, "path_not_allowed",
                           f"{file} links to {file.resolve()}, outside the allowed roots; remove the link or ingest files one by one")


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)
