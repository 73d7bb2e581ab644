"""Exceptions as JSON bodies with a stable ``code``: one table, used by HTTP and jobs alike."""

from __future__ import annotations

from ..errors import (
    AuthenticationError,
    ConfigError,
    FilterError,
    IndexLockedError,
    IndexNotFoundError,
    LoaderError,
    MissingDependencyError,
    MissingStructureError,
    ModelMismatchError,
    ProviderError,
    QueryError,
    RagloomError,
    ServiceUnavailableError,
    SourceNotFoundError,
    StoreError,
    UnknownComponentError,
    UnsupportedFormatError,
)
from .schemas import ErrorBody


class ApiError(RagloomError):
    """An error the server itself raises, with its HTTP status and code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


# Most specific first: the first class an exception is an instance of decides.
_TABLE: tuple[tuple[type[BaseException], int, str], ...] = (
    (FilterError, 422, "invalid_filter"),
    (UnknownComponentError, 422, "unknown_component"),  # a request naming a preset that does not exist
    (QueryError, 422, "invalid_query"),
    (UnsupportedFormatError, 415, "unsupported_format"),
    (SourceNotFoundError, 404, "path_not_found"),
    (LoaderError, 422, "unreadable_file"),
    (IndexLockedError, 409, "index_locked"),
    (IndexNotFoundError, 404, "index_not_found"),
    (MissingStructureError, 409, "missing_structure"),  # a preset needing the entity graph or RAPTOR tree
    (ModelMismatchError, 409, "model_mismatch"),
    (StoreError, 500, "store_error"),
    (ConfigError, 500, "config_error"),
    (MissingDependencyError, 501, "missing_dependency"),
    (AuthenticationError, 502, "provider_auth_failed"),
    (ServiceUnavailableError, 503, "provider_unavailable"),
    (ProviderError, 502, "provider_error"),
    (RagloomError, 500, "ragloom_error"),
)


def classify(exc: BaseException) -> tuple[int, str, str]:
    """(HTTP status, code, message) for an exception; unexpected ones say nothing internal."""
    # Narrower codes for errors raised by the server's own checks (ApiError, PathError, ...).
    code_of = getattr(exc, "code", None)
    status_of = getattr(exc, "status", None)
    if isinstance(code_of, str) and isinstance(status_of, int):
        return status_of, code_of, str(exc)
    for cls, status, code in _TABLE:
        if isinstance(exc, cls):
            return status, code, str(exc)
    return 500, "internal_error", "the server failed to handle this request; see its log for details"


def error_body(exc: BaseException) -> ErrorBody:
    _, code, message = classify(exc)
    return ErrorBody(code=code, message=message)
