"""How a source path is shown to a reader: relative to the folder that was ingested.

An index records the folders its ingests were given (a file given alone records its own
folder), so ``tutorial/index.md`` and ``advanced/index.md`` stay told apart where a file name
alone would show ``index.md`` twice. The full path stays the source's id; this is only what is shown.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .ingest.files import distinguishable, is_under


class DisplayPaths:
    """``source -> display path``: relative to the outermost recorded root that holds the source
    (so a file under two ingested folders shows its longer, more telling path)."""

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = sorted({r.rstrip(os.sep) or os.sep for r in roots}, key=len)

    @classmethod
    def of(cls, recorded: Sequence[str], sources: Sequence[str]) -> DisplayPaths:
        """From the roots an index recorded; an index that recorded none (written by an older
        ragloom) shows its sources relative to the folder they all share."""
        if recorded or not sources:
            return cls(recorded)
        return cls([os.path.commonpath([os.path.dirname(s) for s in sources])])

    def __call__(self, source: str) -> str:
        for root in self.roots:
            if is_under(source, root):
                return distinguishable(os.path.relpath(source, root))
        return distinguishable(source)
