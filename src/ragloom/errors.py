"""One exception tree for ragloom.

Every error says what happened and what to do about it. Where a builtin exception
fits, the class also subclasses it, so callers that catch ``KeyError`` or
``ValueError`` keep working.
"""

from __future__ import annotations

from collections.abc import Iterable


class RagloomError(Exception):
    """Root of every error ragloom raises on purpose."""


class ConfigError(RagloomError, ValueError):
    """A setting is missing, misspelt or has a value of the wrong kind."""


class UnknownConfigKeyError(ConfigError, KeyError):
    """A key in ragloom.yaml or RAGLOOM_* is not a setting."""

    def __init__(self, key: str, where: str, valid: Iterable[str]) -> None:
        self.key = key
        self.valid = sorted(valid)
        super().__init__(
            f"unknown setting {key!r} in {where}; valid keys here are: {', '.join(self.valid)}"
        )

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class UnknownComponentError(RagloomError, KeyError):
    """A name in the config does not match any registered component."""

    def __init__(self, role: str, name: str, valid: Iterable[str]) -> None:
        self.role, self.name, self.valid = role, name, sorted(valid)
        super().__init__(
            f"no {role} named {name!r}; choose one of: {', '.join(self.valid)}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class MissingDependencyError(RagloomError, ImportError):
    """An optional backend needs a package that is not installed."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the Python package {package!r}; "
            f"install it with: pip install 'ragloom[{extra}]'"
        )


class LoaderError(RagloomError):
    """A file could not be read into documents."""


class UnsupportedFormatError(LoaderError, ValueError):
    def __init__(self, path: str, supported: Iterable[str]) -> None:
        self.path = path
        super().__init__(
            f"{path}: unsupported file type; ragloom reads: {', '.join(sorted(supported))}"
        )


class SourceNotFoundError(LoaderError, FileNotFoundError):
    def __init__(self, path: str, message: str | None = None) -> None:
        self.path = path
        super().__init__(message or f"{path}: no such file or directory; check the path and try again")

    def __str__(self) -> str:
        return str(self.args[0])


class CorruptDocumentError(LoaderError):
    """The file exists and has a known type, but its content cannot be parsed."""


class EmbeddingError(RagloomError):
    """The embedder failed: model missing, server unreachable, bad response."""


class ModelMismatchError(EmbeddingError):
    """The index was built with one embedder and is being opened with another."""


class ProviderError(RagloomError):
    """A model provider (HTTP API or local runtime) failed."""


class ServiceUnavailableError(ProviderError, ConnectionError):
    """A server could not be reached."""


class AuthenticationError(ProviderError):
    """An API key is missing or was refused."""


class RateLimitError(ProviderError):
    """The provider kept answering 429 after every retry."""


class ModelNotFoundError(ProviderError, LookupError):
    """The provider does not have the requested model."""


class ModelInstallError(RagloomError):
    """A packaged model could not be fetched, assembled or verified (``ragloom models install``)."""


class StoreError(RagloomError):
    """The store could not be read or written."""


class IndexNotFoundError(StoreError, FileNotFoundError):
    """The index directory does not exist (and was not to be created)."""

    def __str__(self) -> str:
        return str(self.args[0])


class IndexDamagedError(StoreError):
    """The index database cannot be read: the file is damaged or is not an index at all."""


class IndexReadOnlyError(StoreError, PermissionError):
    """A write was asked of an index opened read-only (no write permission)."""

    def __str__(self) -> str:
        return str(self.args[0])


class IndexLockedError(StoreError):
    """Another process is writing to this index."""


class IndexReplacedError(IndexLockedError):
    """The index folder this process opened was moved aside (``ingest --rebuild``) and is being rebuilt."""


class DiskFullError(StoreError):
    """The disk holding the index filled up during a write (which was rolled back)."""

    def __init__(self, where: object) -> None:
        super().__init__(
            f"the disk holding {where} is full; nothing already committed was lost (the write that filled it was "
            "rolled back). Free some space, or use an index on another disk (--index DIR), and run the same "
            "command again: an ingest carries on where it stopped"
        )


class UsageError(RagloomError, ValueError):
    """A command or call was given an argument it cannot act on (an empty path, a negative count)."""


class QueryError(RagloomError, ValueError):
    """The search request itself is invalid (empty query, bad filter)."""


class QueryTooLongError(QueryError):
    """The query is longer than ``search.max_query_chars``."""


class FilterError(QueryError):
    """A metadata filter could not be understood."""


class RagloomWarning(UserWarning):
    """Something worth telling the user that did not stop the operation."""


class FilterWarning(RagloomWarning):
    """A search filter that matches nothing because of how it is written (a key no passage
    has, a value of the wrong type, a source name that names no file)."""


class MissingStructureError(RagloomError, LookupError):
    """A search or command needs a derived structure (entity graph, RAPTOR tree) the index lacks."""

    def __str__(self) -> str:
        return str(self.args[0])


class IngestInterrupted(KeyboardInterrupt):
    """An ingest stopped by Ctrl-C or SIGTERM after keeping what it had finished: ``kept`` files
    were committed in this run, ``report`` says what else it did. A KeyboardInterrupt (not a
    RagloomError), so that no handler of errors swallows an interrupt."""

    def __init__(self, kept: int, report: object) -> None:
        super().__init__(f"kept {kept} files; run again to finish")
        self.kept = kept
        self.report = report


class RemoteSourceError(RagloomError):
    """A remote source (``s3://``, ``https://``, ``git+…``) could not be listed or read; nothing
    already indexed from it is removed because of it."""


class RemoteRefusedError(RemoteSourceError, PermissionError):
    """A URI or an address was refused by policy (private address, host not allowed, credentials in a URI)."""


class SourceBusyError(RemoteSourceError):
    """Another process or replica syncs this remote source now."""
