"""How a source path is shown to a reader: relative to the folder that was ingested.

An index records the folders its ingests were given (a file given alone records its own
folder), so ``tutorial/index.md`` and ``advanced/index.md`` stay told apart where a file name
alone would show ``index.md`` twice. The full path stays the source's id; this is only what is shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from .ingest.files import distinguishable, is_under


_ADDRESS = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_address(source: str) -> bool:
    """Whether a source id is a remote item's address rather than a file's path."""
    return _ADDRESS.match(source) is not None


class DisplayPaths:
    """``source -> display path``: relative to the outermost recorded root that holds the source
    (so a file under two ingested folders shows its longer, more telling path)."""

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = sorted({r.rstrip(os.sep) or os.sep for r in roots}, key=len)

    @classmethod
    def of(cls, recorded: Sequence[str], sources: Sequence[str]) -> DisplayPaths:
        """From the roots an index recorded; an index that recorded none (written by an older
        ragloom) shows its sources relative to the folder they all share."""
        files = [s for s in sources if not is_address(s)]
        if recorded or not files:
            return cls(recorded)
        return cls([os.path.commonpath([os.path.dirname(s) for s in files])])

    def __call__(self, source: str) -> str:
        if is_address(source):  # a remote item (s3://, https://, git+…) is shown by its own address
            return source
        for root in self.roots:
            if is_under(source, root):
                return distinguishable(os.path.relpath(source, root))
        return distinguishable(source)
