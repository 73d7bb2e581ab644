"""``imaps://USER@HOST[:PORT]/MAILBOX``: the messages of a mailbox, and their attachments, read by the
e-mail loader; through the standard library's ``imaplib``.

The mailbox is opened read-only (``EXAMINE``: nothing is marked seen). Messages never change in IMAP,
so a message's UID is its identity: a sync asks for the UIDs there are (``UID SEARCH ALL``), downloads
only those it has not read, and removes those that were expunged. The mailbox's ``UIDVALIDITY`` is the
source's cursor: when the server changes it, every UID is a new one, and the mailbox is read again
(``RFC 3501``). A message's cursor key is ``UIDVALIDITY/UID``; it is indexed under its IMAP URL (``RFC 5092``):
``imaps://USER@HOST/MAILBOX;UIDVALIDITY=V/;UID=U``.

The password comes from ``token_env`` or ``token_file``; ``imaps`` only (or ``imap`` with STARTTLS
required), certificates verified; a host resolving to a private address is refused unless
``sources.allow_private_hosts``.
"""

from __future__ import annotations

import imaplib
import re
import socket
import ssl
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError, RemoteRefusedError, RemoteSourceError
from ..stores.sync_state import RemoteItemState
from .base import Connector, Entry, Failed, Fetched, Skipped, Unchanged
from .fetch import address_refused
from .secrets import token_of

#: Messages fetched per request.
FETCH_BATCH = 50


class ImapConnector(Connector):
    kind = "imap"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        parts = urlsplit(self.spec.uri)
        self.secure = parts.scheme.lower() == "imaps"
        self.host, self.port = parts.hostname or "", parts.port or (993 if self.secure else 143)
        self.user = unquote(parts.username or "")
        self.mailbox = unquote(parts.path.lstrip("/")) or "INBOX"
        if not self.user:
            raise ConfigError(f"{self.spec.uri}: name the user, imaps://USER@HOST/MAILBOX")
        self.password = token_of(self.spec.settings, self.secrets)
        if not self.password:
            raise ConfigError(f"{self.spec.uri}: give the mailbox's password in token_env or token_file "
                              "(sources.remote in ragloom.yaml)")
        self.base = f"{parts.scheme.lower()}://{parts.username}@{parts.netloc.rsplit('@', 1)[-1]}/{parts.path.lstrip('/')}"
        self.client: imaplib.IMAP4 | None = None

    def _connect(self) -> imaplib.IMAP4:
        self._check_host()
        context = ssl.create_default_context()
        timeout = self.settings.timeout
        try:
            if self.secure:
                client: imaplib.IMAP4 = imaplib.IMAP4_SSL(self.host, self.port, ssl_context=context, timeout=timeout)
            else:
                client = imaplib.IMAP4(self.host, self.port, timeout=timeout)
                client.starttls(ssl_context=context)
        except (OSError, imaplib.IMAP4.error) as exc:
            raise RemoteSourceError(f"{self.spec.uri}: unreachable ({_line(exc)})") from None
        self.stage.requests += 1
        try:
            client.login(self.user, self.password)
        except imaplib.IMAP4.error as exc:
            raise RemoteRefusedError(self.secrets.mask(f"{self.spec.uri}: the server refused the login "
                                                       f"({_line(exc)}); check the user and token_env")) from None
        return client

    def _check_host(self) -> None:
        if self.settings.allow_private_hosts:
            return
        try:
            infos = socket.getaddrinfo(self.host, self.port)
        except socket.gaierror as exc:
            raise RemoteSourceError(f"{self.spec.uri}: cannot resolve {self.host} ({exc.strerror})") from None
        for info in infos:
            why = address_refused(info[4][0])
            if why:
                raise RemoteRefusedError(f"{self.host} resolves to {info[4][0]}, {why} address: refused; set "
                                         "sources.allow_private_hosts: true in ragloom.yaml to allow it")

    def scan(self, known: Mapping[str, RemoteItemState], cursor: Mapping[str, Any]) -> Iterator[Entry]:
        client = self.client = self._connect()
        status, _ = client.select(_quoted(self.mailbox), readonly=True)
        self.stage.requests += 1
        if status != "OK":
            raise RemoteSourceError(f"{self.spec.uri}: no mailbox {self.mailbox!r} on the server")
        validity = (client.untagged_responses.get("UIDVALIDITY") or [b""])[-1].decode()
        self.cursor = {"uidvalidity": validity}
        status, found = client.uid("SEARCH", "ALL")
        self.stage.requests += 1
        if status != "OK":
            raise RemoteSourceError(f"{self.spec.uri}: the server would not list the messages")
        # A message's key is UIDVALIDITY/UID: once the server renumbers the mailbox, every key is new
        # (every message is read again) and the old ones, not seen, are removed.
        uids = [uid.decode() for uid in (found[0].split() if found and found[0] else [])]
        new = [uid for uid in uids if f"{validity}/{uid}" not in known]
        for uid in uids:
            if f"{validity}/{uid}" in known:
                yield Unchanged(f"{validity}/{uid}")
        for start in range(0, len(new), FETCH_BATCH):
            yield from self._fetch(new[start : start + FETCH_BATCH], validity)
        self.complete = True

    def _fetch(self, uids: list[str], validity: str) -> Iterator[Entry]:
        client = self.client
        assert client is not None
        status, sizes = client.uid("FETCH", ",".join(uids), "(RFC822.SIZE)")
        self.stage.requests += 1
        size_of = {}
        for line in sizes if status == "OK" else []:
            match = re.search(rb"UID (\d+).*RFC822\.SIZE (\d+)|RFC822\.SIZE (\d+).*UID (\d+)", line or b"")
            if match:
                uid, size = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
                size_of[uid.decode()] = int(size)
        for uid in uids:
            key = f"{validity}/{uid}"
            if size_of.get(uid, 0) > self.stage.max_item_bytes:
                yield Skipped(key, f"larger than {self.stage.max_item_bytes / 1e6:g} MB (sources.max_item_mb)")
                continue
            status, data = client.uid("FETCH", uid, "(BODY.PEEK[])")
            self.stage.requests += 1
            body = next((part[1] for part in data if isinstance(part, tuple)), None) if status == "OK" else None
            if body is None:
                yield Failed(key, "the server did not send the message")
                continue
            path = self.stage.file_for(f"message-{uid}", ".eml")
            self.stage.write(path, iter([body]))
            source = f"{self.base};UIDVALIDITY={validity}/;UID={uid}"
            yield Fetched(key, source, validity, path, {"mailbox": self.mailbox, "uid": int(uid)})

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.logout()
            except (OSError, imaplib.IMAP4.error):
                pass


def _quoted(mailbox: str) -> str:
    return '"' + mailbox.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
