"""Where a PostgreSQL index lives: a libpq URL (or conninfo) and an index name.

``postgresql://USER@HOST:5432/DB?index=docs`` names the index ``docs`` in database ``DB``;
every other query parameter is libpq's (``host=/socket/dir``, ``sslmode=require``, ...), so
the URL without ``index`` is handed to libpq as it is. A password in the URL is never shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ...errors import ConfigError

SCHEMES = ("postgresql://", "postgres://")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
DEFAULT_INDEX = "default"
#: Names an index may not take: ``shared`` is what the tables every replica shares (keys, jobs) go by.
RESERVED = frozenset({"shared"})


def is_postgres_url(text: object) -> bool:
    return isinstance(text, str) and text.lower().startswith(SCHEMES)


@dataclass(frozen=True)
class Address:
    conninfo: str  # for libpq, without ``index``
    index: str

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding this index's tables."""
        return f"ragloom_{self.index}"

    def shown(self) -> str:
        """The address as a user may see it: the password masked."""
        return f"{mask_password(self.conninfo)} (index {self.index})"


def parse_address(url: str, index: str | None = None) -> Address:
    """Split ``?index=NAME`` off a URL; ``index`` (the config's) applies when the URL names none."""
    named = None
    conninfo = url
    if is_postgres_url(url):
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        named = next((value for key, value in query if key == "index"), None)
        rest = [(key, value) for key, value in query if key != "index"]
        conninfo = urlunsplit(parts._replace(query=urlencode(rest, safe="/")))
    name = named or index or DEFAULT_INDEX
    check_index_name(name)
    return Address(conninfo, name)


def check_index_name(name: str) -> None:
    if name in RESERVED:
        raise ConfigError(f"the index name {name!r} is reserved (the tables every replica shares go by it); "
                          "choose another, e.g. ?index=docs")
    if not _NAME.match(name):
        raise ConfigError(
            f"{name!r} is not a valid index name for PostgreSQL; use 1-40 lower-case letters, digits "
            "and underscores, starting with a letter (e.g. ?index=docs)"
        )


def mask_password(conninfo: str) -> str:
    if is_postgres_url(conninfo):
        parts = urlsplit(conninfo)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
            return urlunsplit(parts._replace(netloc=netloc))
        return conninfo
    return re.sub(r"(password\s*=\s*)(\S+)", r"\1***", conninfo)
