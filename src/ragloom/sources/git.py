"""``git+https://HOST/REPO@REF``, ``git+file:///PATH@REF`` (or a local repository, ``./repo@main``):
the files of the commit a ref points to, read with the ``git`` command.

The ref is fetched shallowly into a bare cache (``$RAGLOOM_CACHE_DIR/git/…``, a cache any replica may
lose); the commit is the source's cursor. A file is indexed under the commit that last changed it as
this source saw it (``git+URL@COMMIT:PATH``, with ``commit``, ``ref`` and ``path`` in its metadata),
so a hit names a commit whose tree holds exactly that text and links to ``PATH:LINE`` there. An
unchanged file (same blob id) is neither read nor rewritten; a changed, added or renamed one is read
from the object store; a deleted one is removed.

Safety: only the https, http, git, ssh and (for git+file) file transports are allowed (never
``ext::``); a host resolving to a private address is refused unless ``sources.allow_private_hosts``;
git never prompts; a token goes in an environment-borne ``http.extraHeader``, never on a command line.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import RemoteRefusedError, RemoteSourceError
from ..ingest.loaders import is_supported
from ..stores.sync_state import RemoteItemState
from .base import Connector, Entry, Fetched, Skipped, Unchanged
from .fetch import address_refused
from .secrets import token_of

#: Forges whose web pages show a file at a commit, and the path of such a page.
FORGE_BLOB = {"github.com": "/blob/", "gitlab.com": "/-/blob/", "codeberg.org": "/src/commit/"}


def cache_root() -> Path:
    root = os.environ.get("RAGLOOM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ragloom")
    return Path(root) / "git"


class GitConnector(Connector):
    kind = "git"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        if shutil.which("git") is None:
            raise RemoteSourceError("git sources need the git command; install git (apt-get install git)")
        self.url, self.ref = self.spec.location, self.spec.prefix
        self.cache = cache_root() / hashlib.sha256(self.url.encode()).hexdigest()[:24]
        self.env = self._environment()

    def _environment(self) -> dict[str, str]:
        scheme = urlsplit(self.url).scheme
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="/bin/false", SSH_ASKPASS="/bin/false",
                   GIT_ALLOW_PROTOCOL="file" if scheme == "file" else "https:http:git:ssh",
                   GIT_HTTP_LOW_SPEED_LIMIT="1000", GIT_HTTP_LOW_SPEED_TIME=str(int(self.settings.timeout)),
                   GIT_CONFIG_NOSYSTEM="1")
        token = token_of(self.spec.settings, self.secrets)
        if token:
            user = self.spec.settings.username
            value = ("Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()) if user else f"Bearer {token}"
            self.secrets.add(value.split(" ", 1)[1])
            env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.extraHeader",
                       GIT_CONFIG_VALUE_0=f"Authorization: {value}")
        return env

    def _git(self, *args: str, input: bytes | None = None, timeout: float | None = None) -> bytes:
        try:
            done = subprocess.run(["git", *args], cwd=self.cache, env=self.env, input=input, capture_output=True,
                                  timeout=timeout or self.settings.timeout * 10, check=False)
        except subprocess.TimeoutExpired:
            raise RemoteSourceError(f"{self.url}: git {args[0]} took longer than {timeout or self.settings.timeout * 10:g} s; "
                                    "raise sources.timeout or check the network") from None
        if done.returncode != 0:
            message = " ".join(done.stderr.decode("utf-8", errors="replace").split())[:400]
            raise RemoteSourceError(self.secrets.mask(f"{self.url}: git {args[0]} failed: {message}"))
        return done.stdout

    def _check_host(self) -> None:
        host = urlsplit(self.url).hostname
        if host is None or self.settings.allow_private_hosts or urlsplit(self.url).scheme == "file":
            return
        try:
            infos = socket.getaddrinfo(host, None)
        except socket.gaierror as exc:
            raise RemoteSourceError(f"{self.url}: cannot resolve {host} ({exc.strerror})") from None
        for info in infos:
            why = address_refused(info[4][0])
            if why:
                raise RemoteRefusedError(f"{host} resolves to {info[4][0]}, {why} address: refused; set "
                                         "sources.allow_private_hosts: true in ragloom.yaml to allow it")

    def _fetch_commit(self) -> str:
        self._check_host()
        self.cache.mkdir(parents=True, exist_ok=True)
        if not (self.cache / "HEAD").exists():
            self._git("init", "--bare", "--quiet")
        self.stage.requests += 1
        self._git("fetch", "--quiet", "--no-tags", "--depth=1", "--", self.url, f"+{self.ref}:refs/ragloom/head")
        return self._git("rev-parse", "--verify", "refs/ragloom/head^{commit}").decode().strip()

    def scan(self, known: Mapping[str, RemoteItemState], cursor: Mapping[str, Any]) -> Iterator[Entry]:
        commit = self._fetch_commit()
        self.cursor = {"commit": commit, "ref": self.ref}
        if cursor.get("commit") == commit and known:
            for key in known:
                yield Unchanged(key)
            self.complete = True
            return
        listing = self._git("ls-tree", "-r", "-l", "-z", "--full-tree", commit)
        wanted: list[tuple[str, str, int]] = []
        for line in listing.split(b"\0"):
            if not line:
                continue
            meta, _, raw_path = line.partition(b"\t")
            mode, kind, blob, size = meta.split()
            path = raw_path.decode("utf-8", errors="surrogateescape")
            if kind != b"blob" or mode == b"120000" or not self.selected(path):
                continue  # submodules and symlinks are not files of this repository
            if not is_supported(path):
                yield Skipped(path, f"unsupported file type ({Path(path).suffix or 'none'})")
                continue
            item = known.get(path)
            if item is not None and item.version == blob.decode():
                yield Unchanged(path)
            elif int(size) > self.stage.max_item_bytes:
                yield Skipped(path, f"larger than {self.stage.max_item_bytes / 1e6:g} MB (sources.max_item_mb)")
            else:
                wanted.append((path, blob.decode(), int(size)))
        yield from self._read(wanted, commit)
        self.complete = True

    def _read(self, wanted: list[tuple[str, str, int]], commit: str) -> Iterator[Entry]:
        """The wanted blobs, read in batches from ``git cat-file --batch``."""
        for start in range(0, len(wanted), 200):
            batch = wanted[start : start + 200]
            out = self._git("cat-file", "--batch", input="".join(f"{blob}\n" for _, blob, _ in batch).encode())
            offset = 0
            for path, blob, size in batch:
                header_end = out.index(b"\n", offset)
                offset = header_end + 1
                data = out[offset : offset + size]
                offset += size + 1
                target = self.stage.file_for(path)
                self.stage.write(target, iter([data]))
                yield Fetched(path, f"git+{self.url}@{commit}:{path}", blob, target, self._metadata(path, commit))

    def _metadata(self, path: str, commit: str) -> dict[str, Any]:
        metadata = {"repository": self.url, "commit": commit, "ref": self.ref, "path": path}
        parts = urlsplit(self.url)
        if parts.hostname in FORGE_BLOB and parts.scheme in ("https", "http"):
            repository = parts.path.removesuffix(".git").rstrip("/")
            metadata["link"] = f"https://{parts.hostname}{repository}{FORGE_BLOB[parts.hostname]}{commit}/{path}"
        return metadata
