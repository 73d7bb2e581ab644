"""OpenTelemetry spans around each search step, when the ``otel`` extra is installed.

Without ``opentelemetry-api``, ``span`` hands back one shared do-nothing context
manager: no import, no allocation, no clock read per step. With it, every search is a
``ragloom.search`` span and each pipeline step a child span named after the step, with
hits in/out as attributes; any OpenTelemetry SDK and exporter the application set up
receives them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

try:  # optional: pip install 'ragloom[otel]'
    from opentelemetry import trace as _otel_trace
except ImportError:  # pragma: no cover - exercised when the extra is absent
    _otel_trace = None

_NOTHING: AbstractContextManager[Any] = nullcontext()


def enabled() -> bool:
    return _otel_trace is not None


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span named ``name`` (or a shared no-op when OpenTelemetry is not installed)."""
    if _otel_trace is None:
        return _NOTHING
    tracer = _otel_trace.get_tracer("ragloom")
    return tracer.start_as_current_span(name, attributes={k: v for k, v in attributes.items() if v is not None})


def set_attributes(current: Any, **attributes: Any) -> None:
    """Add attributes to the span ``span`` yielded (nothing when tracing is off)."""
    if current is not None and hasattr(current, "set_attribute"):
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(key, value)
