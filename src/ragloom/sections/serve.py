"""The sections of ragloom as a service: ``server`` (with ``server.mcp``), ``watch``, and ``sources``,
the remote sources synced into the index."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from ..options import Section


class McpConfig(Section):
    ingest: bool = Field(False, description="offer the ingest tool to MCP clients (paths must be inside server.allowed_roots)")


class ServerConfig(Section):
    host: str = Field("127.0.0.1", description="address `ragloom serve` listens on; 0.0.0.0 exposes it to the network")
    port: int = Field(8000, ge=1, le=65535, description="port `ragloom serve` listens on")
    api_key: str | None = Field(
        None, description="key that writes (ingest, delete) must send; None = the RAGLOOM_API_KEY environment "
        "variable; with neither, writes are refused",
    )
    require_key_for_reads: bool = Field(False, description="ask for the API key on searches and listings too")
    job_lease: float = Field(
        30.0, gt=0, description="seconds an ingest job kept in a shared store (postgres) stays with its replica without "
        "a sign of life; then another replica takes it over")
    allowed_roots: list[str] = Field(
        default_factory=list, description="folders whose files POST /v1/ingest and the MCP ingest tool may read by path; "
        "empty = ingest by path is refused (uploads still work)",
    )
    upload_dir: str | None = Field(None, description="where uploaded files are kept; None = <index>/uploads")
    max_upload_bytes: int = Field(50_000_000, ge=1, description="largest uploaded file")
    max_body_bytes: int = Field(100_000_000, ge=1, description="largest request body")
    max_query_chars: int = Field(16_000, ge=1, description="longest query accepted")
    cors_origins: list[str] = Field(default_factory=list, description="origins allowed by CORS; empty = CORS off")
    search_threads: int = Field(4, ge=1, description="searches served at once, each with its own store connection")
    indexes: dict[str, str] = Field(
        default_factory=dict, description="name -> index folder, to serve several indexes (the first is the default, "
        "served at /v1/...; each at /v1/indexes/{name}/...); empty = the one index of `index`",
    )
    mcp: McpConfig = Field(default_factory=McpConfig)


class WatchConfig(Section):
    debounce_ms: int = Field(1600, ge=1, description="changes arriving within this window are ingested together")


def seconds_of(value: Any) -> Any:
    """``90``, ``"90s"``, ``"15m"``, ``"2h"``, ``"1d"`` -> seconds (a float); anything else as given."""
    if isinstance(value, str):
        text = value.strip().lower()
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        try:
            return float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a duration; write seconds (90) or 90s, 15m, 2h, 1d") from None
    return value


#: Seconds, also written 90s, 15m, 2h or 1d.
Duration = Annotated[float, BeforeValidator(seconds_of), Field(gt=0)]


class RemoteSourceConfig(Section):
    """One remote source synced into the index (README "Remote sources")."""

    uri: str = Field(description="s3://BUCKET/PREFIX, https://HOST/PATH (or its sitemap.xml), git+https://HOST/REPO@REF, "
                     "git+file:///PATH@REF, imaps://USER@HOST/MAILBOX")
    interval: Duration | None = Field(
        None, description="sync it this often under `ragloom serve` (seconds, or 30s, 15m, 2h, 1d); None = "
        "sources.interval")
    include: list[str] = Field(default_factory=list, description="only items whose key or path matches one of these "
                               "globs (e.g. docs/**/*.md); empty = every item of a supported type")
    exclude: list[str] = Field(default_factory=list, description="leave out items whose key or path matches one of these")
    max_pages: int | None = Field(None, ge=1, description="web: most pages read per sync; None = sources.max_pages")
    max_depth: int | None = Field(None, ge=0, description="web: most links followed from the start page; None = "
                                  "sources.max_depth")
    token_env: str | None = Field(None, description="environment variable holding a token sent as credentials "
                                  "(web: Authorization: Bearer; git over https: as the password; imaps: the password)")
    token_file: str | None = Field(None, description="a file holding that token (read at each sync, never stored)")
    username: str | None = Field(None, description="git or web over https: the user the token is sent for (Basic "
                                 "authentication); None = the token as a Bearer token")


class SourcesConfig(Section):
    """Remote sources: how they are fetched, which may be, and those synced on a schedule."""

    remote: dict[str, RemoteSourceConfig] = Field(
        default_factory=dict, description="name -> source synced by `ragloom sync [NAME]` and, with an interval, by "
        "`ragloom serve`")
    interval: Duration = Field(300.0, description="how often `ragloom serve` syncs a source that names no interval")
    allow_private_hosts: bool = Field(
        False, description="let the crawler and git reach private, loopback and link-local addresses (refused by "
        "default: a URL must not reach the machine's own network)")
    allowed: list[str] = Field(
        default_factory=list, description="what POST /v1/ingest may fetch by URI: hosts (docs.example.com), buckets "
        "(s3://bucket) and repositories' hosts (git+https://git.example.com); empty = remote URIs refused there")
    max_item_mb: float = Field(25.0, gt=0, description="largest object, page or file downloaded (streamed, and "
                               "refused past it); ingest.max_file_mb still applies")
    max_pages: int = Field(1000, ge=1, description="web: most pages read per sync")
    max_depth: int = Field(5, ge=0, description="web: most links followed from the start page")
    max_sync_mb: float = Field(2000.0, gt=0, description="most bytes downloaded by one sync of one source")
    timeout: float = Field(30.0, gt=0, description="seconds to wait for one response (connect, and each read)")
    batch_items: int = Field(200, ge=1, description="items fetched, then ingested and their cursors committed, at a "
                             "time: an interrupted sync keeps every batch it finished")
    user_agent: str = Field("ragloom (+https://pypi.org/project/ragloom/)", description="the crawler's User-Agent, "
                            "also matched against robots.txt")
