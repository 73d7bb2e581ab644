"""The Ollama API client (``/api/embed``, ``/api/chat``, ``/api/tags``)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ProviderError
from .http import HttpClient, HTTPStatusError, api_key

DEFAULT_URL = "http://localhost:11434"


def ollama_url(configured: str | None = None) -> str:
    """``base_url`` from the config, else ``OLLAMA_BASE_URL``, else ``OLLAMA_HOST``, else localhost.

    ``OLLAMA_HOST`` is the server's own setting and may be a bare ``host``, ``host:port``
    or ``:port``; it is completed the way the ``ollama`` command does.
    """
    url = configured or os.environ.get("OLLAMA_BASE_URL") or os.environ.get("OLLAMA_HOST")
    if not url:
        return DEFAULT_URL
    url = url.strip().rstrip("/")
    scheme, sep, rest = url.partition("://")
    default_port = {"http": "80", "https": "443"}.get(scheme, "11434")
    if not sep:
        scheme, rest, default_port = "http", url, "11434"
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    port = port or default_port
    return f"{scheme}://{host or '127.0.0.1'}:{port}" + (f"/{path}" if path else "")


class OllamaClient(HttpClient):
    start_hint = "start it with `ollama serve` (or set OLLAMA_HOST to where it runs)"
    auth_hint = "check the proxy in front of Ollama"

    def __init__(
        self, base_url: str | None = None, *, api_key_env: str | None = None, **settings: Any
    ) -> None:
        # Ollama itself has no keys; a proxy in front of it may want one.
        key = api_key(api_key_env, "Ollama", required=True) if api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.auth_hint = f"check the key in {api_key_env}" if api_key_env else self.auth_hint
        super().__init__("Ollama", ollama_url(base_url), headers=headers, **settings)


    def models(self) -> list[str]:
        return sorted(m["name"] for m in self.get("/api/tags").get("models", []))

    def explain(self, error: HTTPStatusError, model: str | None) -> ProviderError:
        # Ollama answers 404 {"error": "model \"x\" not found, try pulling it first"}.
        if error.status == 404 and model and "not found" in error.detail:
            return self.model_not_found(model, f"pull it with `ollama pull {model}`")
        if error.status == 404:
            return ProviderError(f"{error}; this Ollama may be too old for {error.url} — upgrade it")
        return error
