"""Remote sources: object storage, websites and git repositories synced into an index.

A source is a URI (``sources/uri.py``); each kind is one connector (``s3.py``, ``web.py``,
``git.py``) implementing ``sources/base.py``'s ``Connector``; one sync (``sync.py``) drives any of
them, feeding fetched items to the ingest through ``ingest/staged.py`` and keeping cursors in the
store's ``SyncState`` role, so any process or replica over the store continues a sync.
"""

from __future__ import annotations

from .report import SyncReport
from .sync import remote_status, sync_remote
from .uri import RemoteSpec, check_allowed, is_remote, local_repository, parse, spec_for

__all__ = ["RemoteSpec", "SyncReport", "check_allowed", "is_remote", "local_repository", "parse", "remote_status",
           "spec_for", "sync_remote"]
