"""The OpenAPI document as this server really behaves: the keys it asks for, its presets and limits.

FastAPI derives the document from the routes and request models (writes declare the key's
two security schemes through their dependencies); what depends on the config (whether reads
need the key, the search presets, the longest query) is added here, so that /docs can
authorize, generated clients send the key, and a fuzzer's valid requests are valid.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ..config import Config
from ..retrieve.pipeline import preset_names, preset_needs_llm
from .schemas import NOT_BLANK

#: Either way of sending the key will do (the names of the schemes routes/__init__.py declares).
KEY_REQUIRED = [{"bearer": []}, {"apiKey": []}]
_HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def describe_api(app: FastAPI, config: Config) -> None:
    """Make ``app.openapi()`` describe the server running with ``config``."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            if config.server.require_key_for_reads:
                _secure_reads(schema)
            _add_config_limits(schema["components"]["schemas"], config)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def methods_at(app: FastAPI, path: str) -> set[str]:
    """The methods the OpenAPI document lists for the path a request was sent to."""
    methods: set[str] = set()
    for template, operations in app.openapi()["paths"].items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, path):
            methods.update(m.upper() for m in operations if m in _HTTP_METHODS)
    return methods


def _secure_reads(schema: dict[str, Any]) -> None:
    """Every operation needs the key, but those that say otherwise (``security: []``, e.g. healthz)."""
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})  # declared by the write routes' dependencies
    for operations in schema["paths"].values():
        for method, operation in operations.items():
            if method in _HTTP_METHODS and "security" not in operation:
                operation["security"] = KEY_REQUIRED


def _add_config_limits(models: dict[str, Any], config: Config) -> None:
    """The bounds the service checks against the config, stated on the request models.

    Only what this server can run is offered: a search preset or an answer strategy that needs an
    LLM is listed only when the server has a local model it can load or an LLM server to ask
    (``llm_unavailable``, which loads nothing), so a request that the document calls valid is
    never refused for the server's lack.
    """
    from ..generate.strategies import strategy_names
    from ..models.llm import llm_unavailable

    longest = config.server.max_query_chars
    has_llm = llm_unavailable(config.llm) is None
    strategies = [name for name in strategy_names() if has_llm or not strategy_needs_llm(name)]
    modes = [name for name in preset_names(config.search.presets)
             if has_llm or not preset_needs_llm(name, config.search.presets)]
    for name, text in (("SearchRequest", "query"), ("ContextRequest", "question"), ("AskRequest", "question")):
        properties = models[name]["properties"]
        # Blank text is refused too: at least one character that is not white space (in either sense).
        properties[text].update(maxLength=longest, pattern=NOT_BLANK)
        _string_branch(properties["mode"])["enum"] = modes
    _string_branch(models["AskRequest"]["properties"]["strategy"])["enum"] = ["auto", *strategies]
    if "ChatCompletionRequest" in models:
        models["ChatCompletionRequest"]["properties"]["model"]["enum"] = ["ragloom", *strategies]


def _string_branch(prop: dict[str, Any]) -> dict[str, Any]:
    """The ``{"type": "string"}`` part of an optional string property (``anyOf`` with null)."""
    return next(option for option in prop.get("anyOf", [prop]) if option.get("type") == "string")


def strategy_needs_llm(name: str) -> bool:
    from .. import registry

    return bool(getattr(registry.resolve("strategy", name), "needs_llm", True))
