"""What an ingest reports as it goes (the CLI's progress bars, a server job's counts)."""

from __future__ import annotations


class IngestProgress:
    """Callbacks an ingest reports to; the CLI draws progress bars with them. ``file_done`` comes
    when a file is committed (``added``, ``updated``) or known not to be (``unchanged``, ``failed``,
    ``skipped``), from the ingest's writer thread or its own."""

    def files(self, total: int) -> None: ...
    def file_done(self, path: str, status: str) -> None: ...
    def embedding(self, chunks: int) -> None: ...
    def embedded(self, chunks: int) -> None: ...

    def check(self) -> None:
        """Raise to stop the ingest (a server job whose lease was lost): called as each event of
        the reading arrives; the files read whole so far are written, then the error is raised."""
