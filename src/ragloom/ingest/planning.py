"""Which files an ingest reads: the paths given, folders walked (glob, exclude, links), formats checked."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import IngestConfig
from ..errors import SourceNotFoundError, UnsupportedFormatError
from ..types import FileFailure, IngestReport
from .files import display_name, name_problem, walk
from .ignore import IgnoreRules
from .loaders import is_supported, supported_extensions

if TYPE_CHECKING:
    from ..paths import PathPolicy


def plan_files(
    paths: Iterable[str | Path], glob: Sequence[str] | None, settings: IngestConfig, report: IngestReport,
    policy: PathPolicy | None = None,
) -> tuple[list[Path], list[str]]:
    """The files to read, in order and without repeats, and the folders they were found in
    (a source gone from one of those is removed). Unreadable names and folders go to ``report``;
    a ``policy`` (a server's door) checks each file found against its roots."""
    files: list[Path] = []
    folders: list[str] = []

    def failed(where: str, why: str) -> None:
        report.failed.append(FileFailure(where, why))

    def skipped(where: str, why: str) -> None:
        report.warnings.append(f"{where}: {why}")

    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists() and not path.is_symlink():
            raise SourceNotFoundError(str(raw))
        if name_problem(path) is not None:
            failed(display_name(path), str(name_problem(path)))
            continue
        if path.is_dir():
            folders.append(str(path.resolve()))
            rules = IgnoreRules(path, tuple(settings.ignore_files), frozenset(settings.vendored))
            found = walk(path, glob or settings.glob, settings.exclude, failed, settings.external_links, skipped,
                         policy, rules=rules, on_vendored=report.skip)
            for file in found:
                if is_supported(file):
                    files.append(file)
                else:
                    report.skip(str(file), f"unsupported type ({file.suffix.lower() or 'no extension'})")
        elif is_supported(path):
            files.append(path)
        else:
            raise UnsupportedFormatError(str(raw), supported_extensions())
    return list(dict.fromkeys(files)), folders
