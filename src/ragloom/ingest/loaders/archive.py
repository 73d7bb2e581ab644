"""Archives: ``.zip``, ``.tar``, ``.tar.gz``/``.tgz`` (and a lone ``.gz`` file), each member a document.

Every member of a supported type is read by its own loader and becomes documents named
``archive.zip/member`` (``doc_id`` the member's path, ``archive_member`` in metadata). The
archive is checked first, under the limits of the zip-based formats (``_archive``: at most
10,000 entries and 512 MB uncompressed, no member that expands 200 times over) whatever its
kind; a member is read from memory, never written to disk, and never runs. Members of other
types, and archives inside the archive, are named in a warning.
"""

from __future__ import annotations

import gzip
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path, PurePosixPath

from ...errors import CorruptDocumentError, LoaderError
from ._archive import MAX_ENTRIES, MAX_RATIO, MAX_UNCOMPRESSED_BYTES, check_archive
from .base import LoadResult, Loader

#: Member names shown in the warning about the members that were not read.
SHOWN = 5


class ArchiveLoader(Loader):
    name = "archive"
    extensions = (".zip", ".tar", ".tgz", ".gz")

    def load(self, path: Path, source: str) -> LoadResult:
        from . import is_supported, load_file

        documents, warnings, left = [], [], []
        try:
            for member, data in _members(path, source):
                if not is_supported(member) or member.endswith(self.extensions):
                    left.append(member)
                    continue
                try:
                    result = load_file(Path(PurePosixPath(member).name), source, data, self.options)
                except LoaderError as exc:
                    warnings.append(f"{source}/{member}: {exc}")
                    continue
                warnings.extend(result.warnings)
                for document in result.documents:
                    doc_id = member if document.doc_id == PurePosixPath(member).name else f"{member}/{document.doc_id}"
                    documents.append(replace(document, doc_id=doc_id, title=document.title or member,
                                             metadata={**document.metadata, "archive_member": f"{path.name}/{member}"}))
        except (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, EOFError, OSError) as exc:
            raise CorruptDocumentError(f"{source} is not a readable archive ({type(exc).__name__}: {exc}); "
                                       "repair it or leave it out") from exc
        if left:
            more = f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
            warnings.append(f"{source}: {len(left)} member(s) of types not read: {', '.join(left[:SHOWN])}{more}")
        return LoadResult(documents, warnings)


def _members(path: Path, source: str) -> Iterator[tuple[str, bytes]]:
    """(member path, bytes) of each regular file in the archive, after the archive is checked."""
    if zipfile.is_zipfile(path):
        check_archive(path, source, "zip archive")
        with zipfile.ZipFile(path) as archive:
            for entry in archive.infolist():
                if not entry.is_dir():
                    yield entry.filename, archive.read(entry)
        return
    name = path.name.lower()
    if name.endswith(".gz") and not name.endswith(".tar.gz"):
        with open(path, "rb") as handle:
            magic = handle.read(2)
        if magic == b"\x1f\x8b" and not _is_tar_gz(path):
            yield path.name[:-3], _gunzip(path, source)
            return
    with tarfile.open(path, "r:*") as archive:
        entries = [m for m in archive.getmembers() if m.isfile()]
        _check_tar(entries, path, source)
        for entry in entries:
            handle = archive.extractfile(entry)
            if handle is not None:
                yield entry.name, handle.read()


def _is_tar_gz(path: Path) -> bool:
    try:
        with tarfile.open(path, "r:gz") as archive:
            return archive.next() is not None
    except (tarfile.TarError, OSError, EOFError):
        return False


def _gunzip(path: Path, source: str) -> bytes:
    with gzip.open(path, "rb") as handle:
        data = handle.read(MAX_UNCOMPRESSED_BYTES + 1)
    if len(data) > MAX_UNCOMPRESSED_BYTES:
        raise CorruptDocumentError(f"{source} expands past {MAX_UNCOMPRESSED_BYTES // 2**20} MB; skipped as a "
                                   "possible bomb")
    return data


def _check_tar(entries: list[tarfile.TarInfo], path: Path, source: str) -> None:
    if len(entries) > MAX_ENTRIES:
        raise CorruptDocumentError(
            f"{source} holds {len(entries):,} archive entries (at most {MAX_ENTRIES:,} are read); skipped as unsafe")
    total = sum(entry.size for entry in entries)
    compressed = max(path.stat().st_size, 1)
    if total > MAX_UNCOMPRESSED_BYTES or (total > 10 * 2**20 and total > MAX_RATIO * compressed):
        raise CorruptDocumentError(
            f"{source} would expand to {total / 2**20:,.0f} MB from {compressed / 2**20:,.1f} MB (at most "
            f"{MAX_UNCOMPRESSED_BYTES // 2**20} MB, {MAX_RATIO} times over, are read); skipped as a possible bomb")
