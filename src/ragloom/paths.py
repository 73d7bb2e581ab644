"""Where an ingest may read, for the doors that let others name files.

The HTTP API, the MCP ``ingest`` tool, uploads and watched folders each hold a
``PathPolicy``: the folders their ingests may read. A path named in a request is checked
when it arrives (``resolve``), so a bad one is a clear 4xx at once. The folder is walked and
its files opened later, on the ingest thread, and a symlink can appear in between; so the
ingest checks again where it opens each file (``refusal``): the file actually open, followed
through every link, must lie inside a root.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from .errors import RagloomError

#: Longest file or folder name, and longest path, in bytes, that Linux and macOS accept.
NAME_MAX = 255
PATH_MAX = 4096


class PathError(RagloomError, ValueError):
    """A path named in a request that cannot be ingested; ``code`` and ``status`` tell the doors
    (HTTP answers with them, MCP puts the code before the message)."""

    def __init__(self, code: str, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.code, self.status = code, status


def check_path_text(raw: str) -> None:
    """PathError unless ``raw`` can name a file at all (no NUL byte, names and length in bounds)."""
    if "\x00" in raw:
        raise PathError("path_invalid", f"{raw!r} contains a NUL byte, which no file name can hold; remove it")
    try:
        encoded = os.fsencode(raw)
    except UnicodeEncodeError:
        raise PathError("path_invalid", f"{raw!r} is not valid Unicode text; send the path as UTF-8") from None
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise PathError("path_name_too_long", f"a name in the path is {len(longest)} bytes long; the limit is "
                        f"{NAME_MAX} bytes per file or folder name ({longest[:40].decode(errors='replace')}...)")
    if len(encoded) > PATH_MAX:
        raise PathError("path_too_long", f"the path is {len(encoded)} bytes long; the limit is {PATH_MAX} bytes")


class PathPolicy:
    """The folders (``roots``) that ingests through one door may read; ``what`` names them in
    messages (the setting that lists them, say), so a refusal says what to change."""

    def __init__(self, roots: Iterable[str | Path], what: str = "server.allowed_roots") -> None:
        self.roots = tuple(Path(os.path.realpath(os.path.expanduser(root))) for root in roots)
        self.what = what

    def contains(self, real: str | Path) -> bool:
        """Whether ``real`` (a path with its links already followed) lies inside a root."""
        path = Path(real)
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def resolve(self, raw: str) -> Path:
        """``raw`` with its links followed, or PathError saying why it cannot be ingested."""
        check_path_text(raw)
        if not self.roots:
            raise PathError("path_not_allowed", f"ingest by path is off: list the folders it may read in {self.what}",
                            status=403)
        path = Path(raw).expanduser()
        if not path.is_absolute():
            raise PathError("path_not_absolute", f"{raw}: give an absolute path inside one of the allowed roots")
        real = Path(os.path.realpath(path))  # a loop stays unresolved here; stat below names it
        if not self.contains(real):
            raise PathError("path_not_allowed", f"{raw} is outside the allowed roots ({self.describe()})", status=403)
        try:
            os.stat(real)
        except OSError as exc:
            raise _stat_error(raw, exc) from None
        if _leads_to_its_own_folder(path, real):
            raise PathError("path_symlink_loop", f"{raw} is a symlink loop: it leads to {real}, a folder that holds "
                            "the link itself; ingest that folder instead, or remove the link")
        return real

    def refusal(self, fd: int, path: str | Path) -> str | None:
        """Why the file open on ``fd`` (opened as ``path``) may not be read, or None when it lies inside a root."""
        real = _opened_path(fd)
        if real is None:  # no way to ask the descriptor: follow the path and check it is still that file
            real = os.path.realpath(path)
            try:
                same = os.stat(real)
            except OSError:
                same = None
            opened = os.fstat(fd)
            if same is None or (same.st_dev, same.st_ino) != (opened.st_dev, opened.st_ino):
                return "refused: the file was replaced while it was being opened; ingest it again"
        if not self.contains(real):
            return f"refused: it leads to {real}, outside {self.describe()}"
        return None

    def describe(self) -> str:
        roots = ", ".join(map(str, self.roots)) or "none"
        return f"{self.what}: {roots}"


def _leads_to_its_own_folder(path: Path, real: Path) -> bool:
    """Whether ``path`` is a link to a folder that holds it (``docs/loop -> ..``): walking it
    would walk into itself without end."""
    if not os.path.islink(path):
        return False
    holder = Path(os.path.realpath(path.parent))
    return holder == real or holder.is_relative_to(real)


def _opened_path(fd: int) -> str | None:
    """The real path of the file open on ``fd``, as the kernel knows it, where it can be asked."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")  # Linux
    except OSError:
        real = None
    if real is not None and real.startswith("/"):
        return real.removesuffix(" (deleted)")
    try:
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)  # macOS
        if getpath is not None:
            return fcntl.fcntl(fd, getpath, bytes(1024)).rstrip(b"\0").decode("utf-8", "surrogateescape")
    except OSError:
        pass
    return None


def _stat_error(raw: str, exc: OSError) -> PathError:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return PathError("path_not_found", f"{raw}: no such file or directory", status=404)
    if exc.errno == errno.ELOOP:
        return PathError("path_symlink_loop", f"{raw} is a symlink loop (it points, through other links, back to "
                         "itself); fix or remove the link")
    if exc.errno == errno.ENAMETOOLONG:
        return PathError("path_too_long", f"{raw}: the path is too long for this file system")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PathError("path_not_readable", f"{raw}: permission denied; the server cannot read it", status=403)
    return PathError("path_unreadable", f"{raw}: {exc.strerror or exc}")
