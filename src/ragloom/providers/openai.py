"""The OpenAI API client (``/embeddings``, ``/chat/completions``, ``/models``).

Works against api.openai.com and any OpenAI-compatible server (vLLM, llama.cpp's
server, LM Studio, TEI): set ``base_url`` or ``OPENAI_BASE_URL`` to its ``.../v1``.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ProviderError
from .http import HttpClient, HTTPStatusError, api_key

DEFAULT_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"


class OpenAIClient(HttpClient):
    def __init__(
        self, base_url: str | None = None, *, api_key_env: str | None = None, **settings: Any
    ) -> None:
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_URL).rstrip("/")
        official = url == DEFAULT_URL
        variable = api_key_env or KEY_VARIABLE
        service = "OpenAI" if official else "OpenAI-compatible server"
        # Local servers rarely want a key; api.openai.com always does.
        key = api_key(variable, service, required=official)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.auth_hint = f"check the key in {variable}"
        self.start_hint = (
            "check your network connection" if official
            else "check that the server is running and `base_url` (ending in /v1) is right"
        )
        super().__init__(service, url, headers=headers, **settings)


    def models(self) -> list[str]:
        return sorted(m["id"] for m in self.get("/models").get("data", []))

    def explain(self, error: HTTPStatusError, model: str | None) -> ProviderError:
        # OpenAI: 404 {"error": {"code": "model_not_found", "message": "The model `x` does not exist ..."}}
        if error.status == 404 and model and ("model" in error.detail.lower()):
            return self.model_not_found(model, "set `model` to one of them")
        if error.status == 404:
            return ProviderError(f"{error}; check that `base_url` ends in /v1 (e.g. http://localhost:8000/v1)")
        return error
