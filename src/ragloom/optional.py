"""Optional dependencies, imported only when the backend that needs them is used."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError


def require(module: str, *, extra: str, feature: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise an error naming the pip extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # the package, or one it needs (torch), is missing
        raise MissingDependencyError(package or module, extra, feature) from exc
