"""What a folder says to leave out: its ``.gitignore`` and ``.ragloomignore`` files, and vendored folders.

Ignore files are read as git reads them (``pathspec``'s gitignore rules), each applying to its
own folder and those below; a deeper file's patterns win over a shallower one's, and a file's
later patterns over its earlier ones (``!keep.md`` re-includes). Vendored folders (``node_modules``,
``vendor``, ``third_party`` …: ``ingest.vendored``) are skipped where they are found and named in the
report, so an ingest of a project reads the project and not its dependencies.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class IgnoreRules:
    """The ignore files met on the way down a folder tree, deepest last."""

    root: Path
    names: Sequence[str]
    vendored: frozenset[str] = frozenset()
    #: (folder relative to the ingested one, its compiled patterns), shallowest first.
    _specs: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)

    def enter(self, relative: str) -> None:
        """Read the ignore files of the folder at ``relative`` ("" for the top), on top of its parent's."""
        parent = relative.rpartition("/")[0] if relative else None
        inherited = self._specs.get(parent, []) if parent is not None else []
        own = self._read(relative)
        self._specs[relative] = inherited + ([(relative, own)] if own is not None else [])

    def _read(self, relative: str) -> Any | None:
        lines: list[str] = []
        for name in self.names:
            try:
                lines += Path(self.root, relative, name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
        if not lines:
            return None
        import pathspec

        return pathspec.GitIgnoreSpec.from_lines(lines)

    def ignored(self, folder: str, relative: str, is_dir: bool = False) -> bool:
        """Whether the entry at ``relative`` (inside ``folder``, both relative to the top) is left out."""
        target = relative + ("/" if is_dir else "")
        for base, spec in reversed(self._specs.get(folder, [])):
            inside = target[len(base) + 1:] if base else target
            result = spec.check_file(inside)
            if result.include is not None:
                return bool(result.include)
        return False

    def vendored_folder(self, name: str) -> bool:
        return name in self.vendored


def relative_posix(path: str, root: str) -> str:
    """``path`` relative to ``root`` in POSIX form, "" for the root itself."""
    relative = os.path.relpath(path, root)
    return "" if relative == "." else Path(relative).as_posix()


def left_out(root: Path, file: Path, ignore_files: Sequence[str], vendored: Sequence[str]) -> bool:
    """Whether a walk of ``root`` leaves ``file`` out (a vendored folder or an ignore file on the way):
    for a watcher that learns of one file at a time."""
    parts = file.relative_to(root).as_posix().split("/")
    if any(part in vendored for part in parts[:-1]):
        return True
    rules = IgnoreRules(root, tuple(ignore_files), frozenset(vendored))
    here = ""
    rules.enter(here)
    for part in parts[:-1]:
        child = f"{here}/{part}" if here else part
        if rules.ignored(here, child, is_dir=True):
            return True
        rules.enter(child)
        here = child
    return rules.ignored(here, "/".join(parts))
