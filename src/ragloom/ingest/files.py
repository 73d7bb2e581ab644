"""Which files an ingest reads, under which source id, and reading them safely.

One bad entry never stops an ingest: a name that is not valid UTF-8, a symlink loop, a
named pipe, a device, an unreadable sub-folder or a file above the size limit is
reported (``on_error``) and the walk goes on. Only regular files are opened, without
blocking (a FIFO would otherwise hang the ingest), and never read past the size limit.

A file's source id is its absolute path with the folders resolved but its own name
kept, so a symlink is indexed under the link's path inside the folder, and deleting the
link sweeps it from the index like any other file.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..paths import PathPolicy
from .ignore import IgnoreRules, relative_posix

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")

#: Called with (where, why) for every entry that cannot be read.
OnError = Callable[[str, str], None]

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class FileRejected(Exception):
    """A file that is not read; the message says why (shown after its path)."""


@dataclass(frozen=True)
class FileContent:
    data: bytes
    mtime: float
    size: int


def source_id(path: str | Path) -> str:
    """The id a file is indexed under: absolute, folders resolved, the file's own name kept."""
    absolute = Path(os.path.abspath(os.path.expanduser(path)))
    if absolute.name in ("", ".", "..") or absolute.is_dir():  # a folder's sources sit under its real path
        return str(absolute.resolve())
    return str(absolute.parent.resolve() / absolute.name)


def ingest_roots(paths: Iterable[str | Path]) -> list[str]:
    """The folders that an ingest of ``paths`` shows its sources relative to: a folder itself,
    a file's own folder."""
    roots = []
    for raw in paths:
        path = Path(raw).expanduser()
        folder = path if path.is_dir() else path.parent
        roots.append(str(folder.resolve()))
    return list(dict.fromkeys(roots))


def is_under(path: str, folder: str) -> bool:
    """Whether the source id ``path`` lies inside the folder ``folder`` (both as ``source_id`` gives them)."""
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def display_name(path: str | Path) -> str:
    """``path`` as printable text: bytes that are not UTF-8 shown as ``\\xff`` escapes."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", errors="backslashreplace")


def distinguishable(name: str) -> str:
    r"""``name`` as printed: a name not in Unicode NFC (``cafe\u0301.md``, as macOS writes it) shows its
    combining marks as ``\u0301`` escapes, so it does not look the same as its NFC twin (``café.md``);
    ``sources_named`` takes it back in that form."""
    if unicodedata.is_normalized("NFC", name):
        return name
    return "".join(f"\\u{ord(c):04x}" if unicodedata.combining(c) else c for c in name)


def sources_named(target: str, sources: Sequence[str]) -> list[str]:
    r"""The sources that ``target`` (a source id: a file, or a folder holding files) names. As typed
    it may differ from the stored name in its Unicode normalisation, or spell combining marks as
    ``\u0301`` (as ``distinguishable`` prints them): an exact match wins, then an unescaped one,
    then one equal after normalisation."""
    def under(name: str, wanted: str) -> bool:
        return name == wanted or name.startswith(wanted.rstrip("/") + "/")

    unescaped = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), target)
    for wanted in dict.fromkeys([target, unescaped]):
        found = [name for name in sources if under(name, wanted)]
        if found:
            return found
    folded = unicodedata.normalize("NFC", unescaped)
    return [name for name in sources if under(unicodedata.normalize("NFC", name), folded)]


def name_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a source id (its name is not valid UTF-8), or None."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return "the file name is not valid UTF-8; rename the file (e.g. with `convmv`) to index it"
    return None


def walk(
    folder: Path,
    patterns: Sequence[str],
    exclude: Sequence[str],
    on_error: OnError,
    external_links: str = "index",
    on_skip: OnError | None = None,
    policy: PathPolicy | None = None,
    on_refused: OnError | None = None,
    rules: IgnoreRules | None = None,
    on_vendored: OnError | None = None,
) -> Iterator[Path]:
    """Files under ``folder`` matching any pattern and no exclusion, in sorted order.

    With ``rules``, what the folder's ignore files name is left out, and vendored folders are
    skipped (each reported to ``on_vendored``).

    ``external_links="skip"`` leaves out symlinks whose target lies outside ``folder``
    (reported to ``on_skip``); with ``"index"`` they are read under the link's own path.
    With a ``policy``, a folder or symlink leading outside its roots is refused (reported to
    ``on_refused``, else to ``on_error``).

    A symlink to a folder is not walked into: one leading to a folder that holds it is a loop
    (``on_error``), any other is skipped with a line (``on_skip``) naming the folder to ingest.
    """
    refused = on_refused or on_error
    real_folder = Path(os.path.realpath(folder))
    if policy is not None and not policy.contains(real_folder):
        refused(source_id(folder), f"refused: it leads to {real_folder}, outside {policy.describe()}")
        return

    def folder_error(exc: OSError) -> None:
        where = exc.filename if exc.filename is not None else folder
        on_error(source_id(where), f"cannot read the folder: {exc.strerror or exc}")

    for root, dirs, files in os.walk(folder, onerror=folder_error):
        here = relative_posix(root, str(folder))
        if rules is not None:
            dirs[:] = _kept_folders(rules, here, root, dirs, on_vendored)
        dirs[:] = [name for name in dirs if not _folder_link(Path(root) / name, on_error, on_skip)]
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            relative = path.relative_to(folder).as_posix()
            if not is_selected(relative, patterns, exclude) or (rules is not None and rules.ignored(here, relative)):
                continue
            problem = name_problem(path)
            if problem is not None:
                on_error(display_name(source_id(path)), problem)
                continue
            if policy is not None and path.is_symlink():
                target = _link_target(path)
                if target is not None and not policy.contains(target):
                    refused(source_id(path), f"refused: a symlink to {target}, outside {policy.describe()}")
                    continue
            if external_links == "skip" and path.is_symlink():
                target = _link_target(path)
                if target is not None and not _inside(target, real_folder):
                    if on_skip is not None:
                        on_skip(source_id(path), f"a symlink to {target}, outside {folder} (ingest.external_links: skip)")
                    continue
            yield path


def _folder_link(path: Path, on_error: OnError, on_skip: OnError | None) -> bool:
    """Whether ``path`` (a folder as the walk meets it) is a symlink, reported: a loop when it
    leads to a folder that holds it, else skipped (its files have a path of their own to ingest)."""
    if not path.is_symlink():
        return False
    where = str(Path(source_id(path.parent)) / path.name)  # the link's own path, not its target's
    target = _link_target(path)
    holder = Path(os.path.realpath(path.parent))
    if target is None or holder == target or holder.is_relative_to(target):
        on_error(where, f"cannot read: a symlink loop (it leads to {target or 'itself'}, a folder that holds it); "
                 "remove the link")
    elif on_skip is not None:
        on_skip(where, f"skipped: a symlink to the folder {target} (folder links are not followed); "
                "ingest that folder itself to index its files")
    return True


def _kept_folders(rules: IgnoreRules, here: str, root: str, names: list[str], on_vendored: OnError | None,
                  ) -> list[str]:
    """The sub-folders of ``root`` walked into: not vendored, not ignored (their rules read)."""
    rules.enter(here)
    kept = []
    for name in names:
        relative = f"{here}/{name}" if here else name
        if rules.vendored_folder(name):
            if on_vendored is not None:
                on_vendored(source_id(Path(root) / name), f"vendored code ({name}/, ingest.vendored)")
        elif not rules.ignored(here, relative, is_dir=True):
            kept.append(name)
    return kept


#: Reads of a file that keeps changing while it is read, before it is reported instead.
READ_ATTEMPTS = 3


def read_regular_file(path: Path, max_bytes: int, policy: PathPolicy | None = None) -> FileContent:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes`` (and, with a
    ``policy``, the file opened lies inside its roots); else FileRejected.

    The bytes are one version of the file: a file written to or replaced (renamed over)
    while it was read is read again, and rejected if it never holds still."""
    if policy is not None and not policy.contains(os.path.realpath(path)):  # says nothing of a file outside
        raise FileRejected(f"refused: it leads outside {policy.describe()}")
    for _ in range(READ_ATTEMPTS):
        content, before, after = _read_once(path, max_bytes, policy)
        if before == after:
            return content
    raise FileRejected(
        f"skipped: it changed while being read, {READ_ATTEMPTS} times; its indexed version (if any) is kept — "
        "ingest again once it is no longer being written"
    )


def _read_once(path: Path, max_bytes: int, policy: PathPolicy | None,
               ) -> tuple[FileContent, tuple[int, ...], tuple[int, ...] | None]:
    """The bytes read, the opened file's identity before reading, and the identity after reading
    of the file that ``path`` names then (None if it is gone)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise FileRejected(_os_reason(exc)) from None
    _check_kind_and_size(info, max_bytes)
    try:  # O_NONBLOCK: if the file was swapped for a FIFO since the stat, open must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileRejected(_os_reason(exc)) from None
    with os.fdopen(fd, "rb") as handle:
        # Checked on the descriptor, after the open: a link swapped in since the walk cannot slip past.
        refusal = policy.refusal(fd, path) if policy is not None else None
        if refusal is not None:
            raise FileRejected(refusal)
        info = os.fstat(fd)
        _check_kind_and_size(info, max_bytes)
        data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:  # it grew while being read
            raise FileRejected(_too_large(len(data), max_bytes))
        after = _identity(os.fstat(fd))
    try:
        named = _identity(os.stat(path))
    except OSError:
        named = None
    return FileContent(data, info.st_mtime, len(data)), _identity(info), after if after == named else None


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is written to or another file takes its name."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _check_kind_and_size(info: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((label for test, label in _KINDS if test(info.st_mode)), "not a regular file")
        raise FileRejected(f"skipped: {kind}, not a regular file")
    if info.st_size > max_bytes:
        raise FileRejected(_too_large(info.st_size, max_bytes))


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"skipped: larger than {_megabytes(max_bytes)} ({_megabytes(size)}); "
        "raise ingest.max_file_mb to index it"
    )


def _megabytes(n: int) -> str:
    return f"{n / 1_000_000:.4g} MB"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "cannot read: a symlink loop (the link points, through other links, back to itself)"
    if exc.errno == errno.ENOENT:
        return "cannot read: a broken symlink or a file deleted meanwhile"
    return f"cannot read: {exc.strerror or exc}"


def _link_target(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):  # a loop or a dangling link: reported when it is read
        return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def is_selected(relative: str, patterns: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a file at ``relative`` (a POSIX path inside a folder) is read when the folder is ingested."""
    return not any(_glob_match(relative, p) for p in exclude) and any(_glob_match(relative, p) for p in patterns)


def _glob_match(relative: str, pattern: str) -> bool:
    if fnmatch.fnmatch(relative, pattern):
        return True
    # "**/" may match zero folders: "**/*.md" also matches "top.md".
    return pattern.startswith("**/") and fnmatch.fnmatch(relative, pattern[3:])
