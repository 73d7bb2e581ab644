"""``ragloom serve``: the HTTP API under uvicorn, optionally watching folders."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..config import Config
from ..optional import require
from ..types import IngestReport
from .watch import Batch

log = logging.getLogger("ragloom.server")
#: How long open requests may run on after Ctrl-C before the server stops anyway.
GRACE_SECONDS = 5


def serve(config: Config, *, host: str, port: int, watch: Sequence[str] = (), log_level: str = "info",
          keys_file: str | None = None) -> None:
    """Serve the indexes until interrupted; ``watch`` folders feed the default index."""
    uvicorn = require("uvicorn", extra="server", feature="ragloom serve")
    require("fastapi", extra="server", feature="ragloom serve")
    from .app import create_app, served_indexes
    from .service import IndexService
    from .watch import FolderWatcher, apply_through_jobs

    if not logging.getLogger().handlers:  # uvicorn configures only its own loggers
        logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    service = IndexService(next(iter(served_indexes(config).values())))
    try:
        app = create_app(config, service, keys_file=keys_file)
        state = app.state.ragloom
        watcher = None
        if watch:
            watcher = FolderWatcher(watch, config, apply_through_jobs(state.jobs),
                                    ignore=[service.path, state.upload_dir], on_batch=log_batch)
            watcher.start()
        try:
            # Ctrl-C: open streams (an answer, an idle SSE client) get a few seconds, then the server stops.
            uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=GRACE_SECONDS)
        finally:
            if watcher is not None:
                watcher.stop()
    finally:
        service.close()


def log_batch(batch: Batch, report: IngestReport | None, error: Exception | None) -> None:
    if error is not None:
        log.warning("watch: %s", error)
    elif report is not None:
        summary = report.summary()
        log.info("watch: added %d, updated %d, removed %d, failed %d",
                 summary["added"], summary["updated"], summary["removed"], summary["failed"])
