"""One HTTP layer for every model server ragloom talks to (Ollama, OpenAI-compatible, Cohere).

Retries with exponential backoff and jitter on 429 (honouring ``Retry-After``), 5xx,
timeouts and refused connections, at most ``max_retries`` times after the first
attempt. Every failure becomes a ragloom error that says what happened and what to do.
A provider subclasses ``HttpClient`` to add its base URL, credentials and the way it
explains a missing model.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import (
    AuthenticationError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    ServiceUnavailableError,
)

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger("ragloom.providers")

#: Longest wait between two attempts, whatever the backoff or Retry-After says.
MAX_DELAY = 60.0


class HTTPStatusError(ProviderError):
    """The server answered with an error status that retrying does not fix."""

    def __init__(self, message: str, *, status: int, detail: str, url: str) -> None:
        super().__init__(message)
        self.status, self.detail, self.url = status, detail, url


class HttpClient:
    """JSON over HTTP with retries; thread-safe, so batches can be sent concurrently."""

    #: Shown when the server cannot be reached, e.g. "start it with `ollama serve`".
    start_hint = "check that the server is running and the URL is right"
    #: What to do about a refused key, e.g. "check OPENAI_API_KEY".
    auth_hint = "check the API key"

    def __init__(
        self,
        service: str,
        base_url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        retry_base_delay: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self._sleep = sleep
        self._client = httpx.Client(base_url=self.base_url, headers=headers or {}, timeout=timeout)

    @classmethod
    def from_config(cls, config: Any) -> Self:
        """A provider's client (subclasses take ``base_url, *, api_key_env, **settings``)
        from the connection fields of an EmbedderConfig or LLMConfig."""
        return cls(
            config.base_url,
            api_key_env=config.api_key_env,
            timeout=config.timeout,
            max_retries=config.max_retries,
            retry_base_delay=config.retry_base_delay,
        )

    # -- requests ---------------------------------------------------------------------

    def get(self, path: str) -> Any:
        response = self._send("GET", path, None)
        return parse_json(response.text, self.service, str(response.url))

    def post(self, path: str, payload: dict[str, Any]) -> Any:
        response = self._send("POST", path, payload)
        return parse_json(response.text, self.service, str(response.url))

    def stream_lines(self, path: str, payload: dict[str, Any]) -> Iterator[str]:
        """Lines of a streamed response (SSE or NDJSON).

        Retries happen only before the first byte arrives; a stream that breaks
        halfway raises, since its start has already been handed to the caller.
        """
        response = self._send("POST", path, payload, stream=True)
        try:
            yield from response.iter_lines()
        except httpx.TimeoutException:
            raise self._timed_out(path, 1) from None
        except httpx.TransportError as exc:
            raise ProviderError(
                f"{self.service} at {self.base_url} broke off the stream of {path}: {exc}; try again"
            ) from None
        finally:
            response.close()

    def close(self) -> None:
        self._client.close()

    def _send(
        self, method: str, path: str, payload: dict[str, Any] | None, *, stream: bool = False
    ) -> httpx.Response:
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            try:
                request = self._client.build_request(method, path, json=payload)
                response = self._client.send(request, stream=stream)
            except httpx.TimeoutException:
                if attempt == attempts:
                    raise self._timed_out(path, attempts) from None
                reason = "timed out"
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise self._unreachable(exc, attempts) from None
                reason = f"connection failed ({exc})"
            else:
                if response.status_code < 400:
                    return response
                if stream:
                    response.read()
                response.close()
                if not _retryable(response.status_code) or attempt == attempts:
                    raise self._status_error(response, attempt, payload)
                retry_after = _retry_after(response.headers)
                reason = f"HTTP {response.status_code}"
            delay = self._delay(attempt, retry_after)
            log.warning(
                "%s %s %s: %s; retry %d of %d in %.2fs",
                self.service, method, path, reason, attempt, self.max_retries, delay,
            )
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # The server said how long to wait: wait at least that, plus a little jitter
            # so concurrent batches do not all come back at the same instant.
            return min(MAX_DELAY, retry_after * (1 + 0.1 * random.random()))
        backoff = min(MAX_DELAY, self.retry_base_delay * 2 ** (attempt - 1))
        return backoff * (0.5 + 0.5 * random.random())

    # -- errors -----------------------------------------------------------------------

    def _unreachable(self, exc: Exception, attempts: int) -> ServiceUnavailableError:
        return ServiceUnavailableError(
            f"{self.service} is not reachable at {self.base_url} — {self.start_hint} "
            f"({attempts} attempts; last error: {exc})"
        )

    def _timed_out(self, path: str, attempts: int) -> ServiceUnavailableError:
        return ServiceUnavailableError(
            f"{self.service} at {self.base_url} did not answer {path} within {self.timeout:g}s "
            f"({attempts} attempts); the server may be overloaded or still loading the model — "
            "raise `timeout` in ragloom.yaml or try again later"
        )

    def _status_error(
        self, response: httpx.Response, attempts: int, payload: dict[str, Any] | None
    ) -> ProviderError:
        status, url, detail = response.status_code, str(response.url), error_detail(response)
        if status == 429:
            return RateLimitError(
                f"{self.service} kept answering 429 Too Many Requests after {attempts} attempts "
                f"({detail}); wait a minute, lower `concurrency`, or raise `max_retries`"
            )
        if status in (401, 403):
            return AuthenticationError(
                f"{self.service} refused the request with HTTP {status} ({detail}); {self.auth_hint}"
            )
        if status >= 500:
            return ProviderError(
                f"{self.service} at {url} failed with HTTP {status} after {attempts} attempts: "
                f"{detail}; check the server's log or try again later"
            )
        error = HTTPStatusError(
            f"{self.service} rejected {url} with HTTP {status}: {detail}",
            status=status, detail=detail, url=url,
        )
        return self.explain(error, (payload or {}).get("model"))

    def explain(self, error: HTTPStatusError, model: str | None) -> ProviderError:
        """Turn a 4xx into a more useful error; providers recognise their missing-model answer."""
        return error

    def models(self) -> list[str]:
        """Names of the models the server offers (for error messages)."""
        return []

    def model_not_found(self, model: str, hint: str) -> ModelNotFoundError:
        try:
            available = self.models()
        except ProviderError:
            available = []
        listed = ", ".join(available) if available else "(it listed none)"
        return ModelNotFoundError(
            f"{self.service} at {self.base_url} has no model {model!r}; it has: {listed} — {hint}"
        )


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or an HTTP date)."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_detail(response: httpx.Response) -> str:
    """The human part of an error body: ``{"error": "..."}`` (Ollama),
    ``{"error": {"message": ...}}`` (OpenAI), ``{"message": ...}`` (Cohere), ``{"detail": ...}``."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if error:
            return str(error)
        for key in ("message", "detail"):
            if body.get(key):
                return str(body[key])
    return json.dumps(body)[:300]


def parse_json(text: str, service: str, url: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        snippet = text.strip()[:120]
        raise ProviderError(
            f"{service} at {url} answered with something that is not JSON ({snippet!r}); "
            f"check that the URL points at a {service} server"
        ) from None


def iter_sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event, data) pairs of a server-sent-event stream; ``event`` is "" when unnamed."""
    event, data = "", []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            event = line[6:].strip()
    if data:
        yield event, "\n".join(data)


def api_key(variable: str, service: str, *, required: bool) -> str | None:
    """The key in environment variable ``variable``; an error naming it when required and unset."""
    key = os.environ.get(variable, "").strip()
    if not key and required:
        raise AuthenticationError(
            f"{service} needs an API key: set the environment variable {variable} "
            "(or name another variable in `api_key_env`)"
        )
    return key or None


def dig(data: Any, *path: str | int, service: str) -> Any:
    """``data[path[0]][path[1]]...``; a ProviderError naming the missing field otherwise."""
    node = data
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            where = ".".join(str(part) for part in path)
            raise ProviderError(
                f"{service} answered without the field {where!r}: {json.dumps(data)[:200]}; "
                "is the server speaking the API ragloom expects?"
            ) from None
    return node
