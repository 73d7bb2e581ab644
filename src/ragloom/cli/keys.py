"""``ragloom keys add|list|revoke``: the scoped API keys of ``ragloom serve --keys-file``."""

from __future__ import annotations

import json
import time
from typing import Optional

import typer
from rich.table import Table

from .shared import console, state

keys_app = typer.Typer(
    help="Scoped API keys for `ragloom serve --keys-file FILE`.\n\n"
    "Example: ragloom keys add team-a --scope read --where team=a --keys-file keys.json",
    no_args_is_help=True)
KEYS_FILE = typer.Option(
    ..., "--keys-file", help="The keys file (created if missing; holds hashes, never keys), or a postgresql://... "
    "database that several servers share.")


@keys_app.command("add")
def add_command(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The key's name (recorded in the audit log instead of the key)."),
    scope: Optional[list[str]] = typer.Option(
        None, "--scope", help="read (search, context, ask, sources), write (also ingest, delete) or admin (also "
        "every tenant's audit log and metrics); default read."),
    index: Optional[list[str]] = typer.Option(
        None, "--index", "-i", help="An index the key may use (repeatable; default all)."),
    where: Optional[list[str]] = typer.Option(
        None, "--where", help="FIELD=VALUE ANDed to every read the key makes, and stamped on what it uploads (repeatable)."),
    rate: Optional[float] = typer.Option(None, "--rate", help="Requests a second (token bucket); past it: 429."),
    burst: Optional[int] = typer.Option(None, "--burst", help="Requests that may come at once (default: the rate, at least 1)."),
    keys_file: str = KEYS_FILE,
) -> None:
    """Create a key; it is printed once, alone on the last line, and only its hash is kept.

    Example: ragloom keys add team-a --scope read --where team=a --keys-file keys.json
    """
    from ..server.keys import open_keys, parse_key_where

    _check_index_names(ctx, index or [])
    key, record = open_keys(keys_file).add(name, scopes=scope or [], indexes=index or [],
                                          where=parse_key_where(where or []), rate=rate, burst=burst)
    console.print(f"added key {record.name!r}: {describe(record)}", highlight=False)
    console.print("store the key now, it is not shown again:", highlight=False)
    print(key, flush=True)


def describe(record) -> str:  # noqa: ANN001 - a server.keys.KeyRecord, imported lazily
    """What a key may do, as stored: scope, indexes, filter and rate, each said even when open."""
    indexes = ", ".join(record.indexes) if record.indexes else "every index (no --index given)"
    where = json.dumps(record.where) if record.where else "none (every document)"
    rate = f"{record.rate:g} requests/s" if record.rate else "unlimited"
    return f"scope {record.scope}; indexes {indexes}; where {where}; rate {rate}"


def _check_index_names(ctx: typer.Context, names: list[str]) -> None:
    """Refuse an index name that the configuration's ``server.indexes`` does not list.

    The keys file itself cannot know which indexes a server will serve; the configuration can,
    when it names them. Without such a list every name is taken as given.
    """
    from ..errors import RagloomError, UsageError

    if not names:
        return
    try:
        known = list(state(ctx).config().server.indexes)
    except RagloomError:
        return
    unknown = [n for n in names if known and n not in known]
    if unknown:
        raise UsageError(f"no index named {', '.join(map(repr, unknown))} in server.indexes "
                         f"(known: {', '.join(known)}); name one of those, or add it to the configuration")


@keys_app.command("list")
def list_command(keys_file: str = KEYS_FILE, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """The keys: name, scope, indexes, filter, rate, creation time (never the keys).

    Example: ragloom keys list --keys-file keys.json
    """
    from ..server.keys import open_keys

    records = open_keys(keys_file).records()
    if as_json:
        console.print_json(json.dumps([{k: v for k, v in r.to_json().items() if k != "hash"} for r in records]))
        return
    table = Table("name", "scope", "indexes", "where", "rate", "created")
    for r in records:
        table.add_row(r.name, r.scope, ", ".join(r.indexes) or "all", json.dumps(r.where) if r.where else "",
                      f"{r.rate:g}/s" if r.rate else "", time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)))
    console.print(table)


@keys_app.command("revoke")
def revoke_command(name: str = typer.Argument(..., help="The key's name."), keys_file: str = KEYS_FILE) -> None:
    """Remove a key; a server reading the file refuses it from its next request.

    Example: ragloom keys revoke team-a --keys-file keys.json
    """
    from ..server.keys import open_keys

    open_keys(keys_file).revoke(name)
    console.print(f"revoked key {name!r}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
