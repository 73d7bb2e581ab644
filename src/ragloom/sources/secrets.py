"""A source's credentials: read from an environment variable or a file when a sync needs them,
kept in memory only for it, never written anywhere, and masked in every message it reports."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..config import RemoteSourceConfig
from ..errors import ConfigError

MASK = "***"


class Secrets:
    """The secret values one sync holds, and ``mask`` to take them out of any text."""

    def __init__(self, values: list[str] | None = None) -> None:
        self.values = [v for v in (values or []) if v]

    def add(self, value: str | None) -> str | None:
        if value:
            self.values.append(value)
        return value

    def mask(self, text: str) -> str:
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, MASK)
        # A password in a URL, whatever it is.
        return re.sub(r"(://[^/\s:@]+:)[^@\s/]+@", rf"\1{MASK}@", text)


def token_of(settings: RemoteSourceConfig, secrets: Secrets) -> str | None:
    """The source's token (``token_env`` or ``token_file``), or None; ConfigError when named but absent."""
    if settings.token_env:
        value = os.environ.get(settings.token_env)
        if not value:
            raise ConfigError(f"the environment variable {settings.token_env} (token_env of {settings.uri}) is not set; "
                              "set it to the token, or remove token_env")
        return secrets.add(value.strip())
    if settings.token_file:
        try:
            value = Path(settings.token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {settings.token_file} ({exc.strerror or exc}); "
                              "check token_file") from None
        return secrets.add(value)
    return None
