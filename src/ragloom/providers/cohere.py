"""The Cohere v2 API client (``/v2/embed``, ``/v2/rerank``, ``/v2/chat``, ``/v1/models``)."""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from .http import HttpClient, HTTPStatusError, api_key

DEFAULT_URL = "https://api.cohere.com"
KEY_VARIABLE = "COHERE_API_KEY"


class CohereClient(HttpClient):
    start_hint = "check your network connection (or `base_url`)"

    def __init__(
        self, base_url: str | None = None, *, api_key_env: str | None = None, **settings: Any
    ) -> None:
        variable = api_key_env or KEY_VARIABLE
        key = api_key(variable, "Cohere", required=True)
        self.auth_hint = f"check the key in {variable}"
        headers = {"Authorization": f"Bearer {key}", "X-Client-Name": "ragloom"}
        super().__init__("Cohere", base_url or DEFAULT_URL, headers=headers, **settings)


    def models(self) -> list[str]:
        return sorted(m["name"] for m in self.get("/v1/models").get("models", []))

    def explain(self, error: HTTPStatusError, model: str | None) -> ProviderError:
        # Cohere: 404 {"message": "model 'x' not found, make sure the correct model ID was used ..."}
        if error.status in (400, 404) and model and "not found" in error.detail.lower():
            return self.model_not_found(model, "check the name and that your key may use it")
        return error
