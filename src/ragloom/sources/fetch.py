"""HTTP for remote sources, guarded: what a crawler given someone else's URL must never do.

- Private, loopback, link-local and other special addresses are refused where the connection is made
  (``GuardedBackend``: after DNS, so a name that resolves to 127.0.0.1 or 169.254.169.254 is refused
  as the address itself is, and no re-resolution can slip past the check), unless
  ``sources.allow_private_hosts`` is on.
- Redirects are followed by hand, at most ``MAX_REDIRECTS``, each hop checked: one that leaves the
  source's host is refused.
- Bodies are streamed, into a file or memory, and cut off past a size limit; the content type is
  returned for the caller to check.
- Only http and https; no proxies from the environment; the source's token is sent to its own host only.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from ..errors import RemoteRefusedError, RemoteSourceError
from .base import Stage, TooLarge

MAX_REDIRECTS = 5
#: Bytes read from a response at a time.
READ_BYTES = 1 << 16


def address_refused(ip: str) -> str | None:
    """Why a connection to ``ip`` is refused (None: it is a public address)."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for test, what in ((address.is_loopback, "a loopback"), (address.is_link_local, "a link-local"),
                       (address.is_private, "a private"), (address.is_multicast, "a multicast"),
                       (address.is_unspecified, "an unspecified"), (address.is_reserved, "a reserved")):
        if test:
            return what
    return None


class GuardedBackend(httpcore.SyncBackend):
    """Connects only to addresses the policy allows, checked after DNS resolution."""

    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise httpcore.ConnectError(f"cannot resolve {host} ({exc.strerror})") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        if not self.allow_private:
            for ip in addresses:
                why = address_refused(ip)
                if why is not None:
                    raise RemoteRefusedError(
                        f"{host} resolves to {ip}, {why} address: refused (a URL must not reach this machine or "
                        "its network); set sources.allow_private_hosts: true in ragloom.yaml to allow it")
        return super().connect_tcp(addresses[0], port, timeout, local_address, socket_options)


@dataclass
class Response:
    """What a fetch gave: the final URL after redirects, status, headers, and the body (in memory or a file)."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes = b""
    path: Path | None = None
    size: int = 0
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class Redirected(RemoteRefusedError):
    """A redirect the source may not follow (to another host, or outside its path)."""

    def __init__(self, message: str, target: str) -> None:
        super().__init__(message)
        self.target = target


class Fetcher:
    """One sync's HTTP client for one host; counts its requests and bytes in the ``Stage``."""

    def __init__(self, host: str, stage: Stage, *, allow_private: bool, timeout: float, user_agent: str,
                 token: str | None = None, username: str | None = None) -> None:
        self.host, self.stage = host.lower(), stage
        transport = httpx.HTTPTransport(retries=0)
        transport._pool._network_backend = GuardedBackend(allow_private)  # noqa: SLF001 - the one place to check
        self.client = httpx.Client(transport=transport, timeout=httpx.Timeout(timeout), trust_env=False,
                                   follow_redirects=False, headers={"User-Agent": user_agent})
        self.auth: httpx.Auth | None = None
        if token:
            self.auth = httpx.BasicAuth(username, token) if username else _Bearer(token)

    def get(self, url: str, headers: Mapping[str, str] | None = None, *, into: Path | None = None,
            max_bytes: int | None = None, allow: Any = None, accept: Any = None) -> Response:
        """GET ``url``, following redirects on the source's host (``allow(url)`` may refuse more with
        a reason); the body into ``into`` (a file) or memory, cut off past ``max_bytes`` (TooLarge), and
        not read at all when ``accept(content_type)`` says no.
        RemoteSourceError for a network failure, RemoteRefusedError for a refused address or redirect."""
        redirects: list[str] = []
        for _ in range(MAX_REDIRECTS + 1):
            self._check(url, allow, redirects)
            try:
                self.stage.requests += 1
                with self.client.stream("GET", url, headers=dict(headers or {}), auth=self.auth or
                                        httpx.USE_CLIENT_DEFAULT) as response:
                    if response.is_redirect and "location" in response.headers:
                        redirects.append(url)
                        url = urljoin(url, response.headers["location"])
                        continue
                    return self._read(response, url, redirects, into, max_bytes, accept)
            except RemoteSourceError:
                raise
            except httpx.TimeoutException:
                raise RemoteSourceError(f"{url}: no answer within {self.client.timeout.read:g} s (sources.timeout)") \
                    from None
            except (httpx.HTTPError, httpcore.ConnectError) as exc:
                raise RemoteSourceError(f"{url}: unreachable ({' '.join(str(exc).split()) or type(exc).__name__})") \
                    from None
        raise RemoteSourceError(f"{redirects[0]}: more than {MAX_REDIRECTS} redirects; not followed")

    def _check(self, url: str, allow: Any, redirects: list[str]) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise Redirected(f"{redirects[0] if redirects else url}: redirects to {url}, not http(s); not followed", url)
        if (parts.netloc or "").lower() != self.host:
            what = f"redirects to another host ({parts.netloc})" if redirects else f"is on another host ({parts.netloc})"
            raise Redirected(f"{redirects[0] if redirects else url}: {what}; refused, a source stays on its host", url)
        why = allow(url) if allow is not None and redirects else None
        if why:
            raise Redirected(f"{redirects[0]}: redirects to {url}, {why}; not followed", url)

    def _read(self, response: httpx.Response, url: str, redirects: list[str], into: Path | None,
              max_bytes: int | None, accept: Any) -> Response:
        result = Response(url, response.status_code, {k.lower(): v for k, v in response.headers.items()},
                          redirects=redirects)
        if response.status_code != 200 or (accept is not None and not accept(result.content_type)):
            return result
        declared = response.headers.get("content-length")
        limit = max_bytes if max_bytes is not None else self.stage.max_item_bytes
        if declared and declared.isdigit() and int(declared) > limit:
            raise TooLarge(f"{url}: {int(declared) / 1e6:.1f} MB, larger than {limit / 1e6:g} MB "
                           "(sources.max_item_mb); not downloaded")
        chunks = response.iter_bytes(READ_BYTES)
        try:
            if into is not None:
                result.path, result.size = into, self.stage.write(into, chunks)
            else:
                result.body = self._collect(chunks, limit, url)
                result.size = len(result.body)
        except TooLarge as exc:
            raise TooLarge(f"{url}: {exc}") from None
        return result

    def _collect(self, chunks: Iterator[bytes], limit: int, url: str) -> bytes:
        body = bytearray()
        for chunk in chunks:
            body += chunk
            self.stage.bytes_downloaded += len(chunk)
            if len(body) > limit:
                raise TooLarge(f"larger than {limit / 1e6:g} MB; not read")
        return bytes(body)

    def close(self) -> None:
        self.client.close()


class _Bearer(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Iterator[httpx.Request]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request
