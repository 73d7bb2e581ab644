"""What a remote source's URI says: its kind, where it is, and whether a server may fetch it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ..config import RemoteSourceConfig, SourcesConfig
from ..errors import RemoteRefusedError, UsageError

KINDS = ("s3", "web", "git", "imap")
_SCHEME = re.compile(r"^(s3|https?|git\+https?|git\+file|git\+ssh|git\+git|imaps?)://", re.IGNORECASE)


def is_remote(text: str) -> bool:
    """Whether ``text`` names a remote source rather than a local path."""
    return bool(_SCHEME.match(str(text).strip()))


@dataclass(frozen=True)
class RemoteSpec:
    """One remote source: its name (the key of its cursors), URI, kind and settings."""

    name: str
    uri: str
    kind: str
    settings: RemoteSourceConfig
    #: s3: bucket; web: host; git: the repository's URL (without git+ and @REF)
    location: str = ""
    #: s3: key prefix; web: path prefix; git: the ref
    prefix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def parse(uri: str, name: str | None = None, settings: RemoteSourceConfig | None = None) -> RemoteSpec:
    """The source ``uri`` names; UsageError for one ragloom cannot sync, RemoteRefusedError for
    one carrying a password (credentials come from the environment or a file, never a URI)."""
    text = uri.strip()
    settings = settings or RemoteSourceConfig(uri=text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if parts.password:
        raise RemoteRefusedError(
            f"{mask_uri(text)}: a URI must not carry a password (it would be stored with every item); put it in an "
            "environment variable or a file and name it in the source's token_env or token_file")
    if scheme == "s3":
        if not parts.netloc:
            raise UsageError(f"{text}: name a bucket, s3://BUCKET or s3://BUCKET/PREFIX")
        prefix = parts.path.lstrip("/")
        return RemoteSpec(name or f"s3://{parts.netloc}/{prefix}", text, "s3", settings, parts.netloc, prefix)
    if scheme in ("http", "https"):
        if not parts.hostname:
            raise UsageError(f"{text}: name a site, https://HOST/PATH")
        path = parts.path or "/"
        start = urlunsplit((scheme, parts.netloc.lower(), path, parts.query, ""))
        # The crawl stays under the start page's folder (a sitemap's folder for a sitemap); a last
        # segment without a dot is a folder (https://h/guide crawls /guide/).
        last = path.rsplit("/", 1)[-1]
        prefix = path if path.endswith("/") else path + "/" if "." not in last else path.rsplit("/", 1)[0] + "/"
        return RemoteSpec(name or start, start, "web", settings, parts.netloc.lower(), prefix)
    if scheme.startswith("git+") or scheme == "git":
        repository, ref = _split_ref(text.removeprefix("git+") if scheme.startswith("git+") else text)
        return RemoteSpec(name or text, text, "git", settings, repository, ref)
    if scheme in ("imap", "imaps"):
        if not parts.hostname or not parts.username:
            raise UsageError(f"{text}: name the user, the server and the mailbox, imaps://USER@HOST/MAILBOX")
        mailbox = unquote(parts.path.lstrip("/")) or "INBOX"
        return RemoteSpec(name or text, text, "imap", settings, parts.netloc.rsplit("@", 1)[-1].lower(), mailbox)
    raise UsageError(f"{text}: not a remote source ragloom syncs; use s3://BUCKET/PREFIX, https://HOST/PATH, "
                     "git+https://HOST/REPO@REF, git+file:///PATH@REF or imaps://USER@HOST/MAILBOX")


def local_repository(path: str) -> str | None:
    """A local path that is a git repository (``ragloom ingest ./repo@main``), as a git+file URI."""
    base, _, ref = path.rpartition("@") if "@" in Path(path).name else (path, "", "")
    folder = Path(base or path).expanduser()
    if (folder / ".git").exists() or (folder / "HEAD").is_file() and (folder / "objects").is_dir():
        return f"git+{folder.resolve().as_uri()}" + (f"@{ref}" if ref else "")
    return None


def _split_ref(url: str) -> tuple[str, str]:
    """``https://host/repo.git@main`` -> (``https://host/repo.git``, ``main``); no ref: HEAD."""
    parts = urlsplit(url)
    path = parts.path
    if "@" in path.rsplit("/", 1)[-1]:
        path, _, ref = path.rpartition("@")
    else:
        ref = "HEAD"
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), unquote(ref)


def spec_for(name_or_uri: str, sources: SourcesConfig) -> RemoteSpec:
    """A configured source by name, or an ad-hoc one by URI."""
    if name_or_uri in sources.remote:
        settings = sources.remote[name_or_uri]
        return parse(settings.uri, name_or_uri, settings)
    if is_remote(name_or_uri):
        for name, settings in sources.remote.items():  # a configured source named by its URI keeps its settings
            if settings.uri.strip() == name_or_uri.strip():
                return parse(settings.uri, name, settings)
        return parse(name_or_uri)
    names = ", ".join(sources.remote) or "none are configured (sources.remote in ragloom.yaml)"
    raise UsageError(f"{name_or_uri!r} is neither a configured remote source ({names}) nor a URI "
                     "(s3://, https://, git+https://, git+file://)")


def check_allowed(spec: RemoteSpec, allowed: list[str]) -> None:
    """RemoteRefusedError unless ``spec`` is in a server's ``sources.allowed`` list: a host
    (``docs.example.com``), a bucket (``s3://bucket``) or a repository host (``git+https://host``)."""
    wanted = {
        "s3": {f"s3://{spec.location}"},
        "web": {spec.location, urlsplit(spec.uri).hostname or ""},
        "git": {f"git+{_origin(spec.location)}", urlsplit(spec.location).hostname or ""},
        "imap": {f"imaps://{spec.location}", spec.location.split(":")[0]},
    }[spec.kind]
    if not any(entry.rstrip("/").lower() in {w.lower() for w in wanted} for entry in allowed):
        shown = sorted(w for w in wanted if w)[0] if any(wanted) else spec.uri
        raise RemoteRefusedError(
            f"{mask_uri(spec.uri)}: this server may not fetch it; add {shown!r} to sources.allowed in the server's "
            "ragloom.yaml")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", "")) if parts.scheme != "file" else "file://"


def mask_uri(uri: str) -> str:
    """``uri`` with any password in it replaced by ``***``."""
    parts = urlsplit(uri)
    if not parts.password:
        return uri
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
