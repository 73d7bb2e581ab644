"""A real PostgreSQL with pgvector for tests and local trials: the ``pgserver`` wheel
(PostgreSQL 16 + pgvector), started in a folder and reached over a unix socket.

::

    with PostgresServer(tmp_path) as server:
        url = server.url("docs")   # postgresql://postgres:@/postgres?host=...&index=docs
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

from ..optional import require


class PostgresServer:
    """Starts (or joins) the server whose data folder is ``data_dir``; stops it on exit."""

    def __init__(self, data_dir: Path, keep: bool = False) -> None:
        self.data_dir = Path(data_dir)
        self.keep = keep
        self.handle: Any = None

    def start(self) -> PostgresServer:
        pgserver = require("pgserver", extra="postgres-test", feature="the test PostgreSQL server")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.handle = pgserver.get_server(self.data_dir / "pgdata", cleanup_mode=None if self.keep else "stop")
        return self

    @property
    def socket_dir(self) -> str:
        return str(self.data_dir / "pgdata")

    def url(self, index: str | None = None, database: str = "postgres") -> str:
        """A libpq URL of the server (unix socket), naming ``index`` when given."""
        query = {"host": self.socket_dir, **({"index": index} if index else {})}
        return f"postgresql://postgres@/{database}?{urlencode(query, safe='/')}"

    def execute(self, statement: str) -> Any:
        return self.handle.psql(statement)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cleanup()
            self.handle = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
