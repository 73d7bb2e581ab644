"""Command-line arguments, before click reads them."""

from __future__ import annotations

from typing import Any


def hoist_global_options(args: list[str], group: Any) -> list[str]:
    """Move global options written after the command (``ragloom ingest docs -e onnx``) in front of it.

    click only reads a group's options before the subcommand. An option that the command
    itself defines (``eval --config``), or a subcommand of a command group
    (``keys add --index docs``), stays where it is, and so does everything after ``--``.
    """
    def table(params: Any) -> dict[str, Any]:
        return {opt: p for p in params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")}

    def option_of(arg: str, options: dict[str, Any]) -> tuple[Any, bool]:
        """The option ``arg`` names, and whether its value is attached (``--index=x``, ``-ix``)."""
        if arg.startswith("--"):
            name, eq, _ = arg.partition("=")
            return options.get(name), bool(eq)
        if arg.startswith("-") and len(arg) >= 2:
            return options.get(arg[:2]), len(arg) > 2
        return None, False

    def width(param: Any, attached: bool) -> int:
        return 1 if attached or getattr(param, "is_flag", False) or param.nargs == 0 else 2

    options = table(group.params)
    position = 0
    while position < len(args) and args[position].startswith("-") and args[position] != "--":
        param, attached = option_of(args[position], options)
        position += width(param, attached) if param is not None else 1
    command = group.commands.get(args[position]) if position < len(args) else None
    if command is None:
        return args
    own = _own_options(command, args[position + 1:], table, option_of, width)
    moved: list[str] = []
    kept: list[str] = []
    rest = args[position + 1:]
    i = 0
    while i < len(rest):
        if rest[i] == "--":
            kept.extend(rest[i:])
            break
        mine, attached = option_of(rest[i], own)
        if mine is not None:  # the command's own option, with its value
            n = width(mine, attached)
            kept.extend(rest[i:i + n])
            i += n
            continue
        param, attached = option_of(rest[i], options)
        if param is not None:
            n = width(param, attached)
            moved.extend(rest[i:i + n])
            i += n
            continue
        kept.append(rest[i])
        i += 1
    return [*args[:position], *moved, args[position], *kept]


def _own_options(command: Any, rest: list[str], table: Any, option_of: Any, width: Any) -> dict[str, Any]:
    """The options of ``command`` and of the subcommands that ``rest`` names, group by group.

    ``keys add --index docs`` gives a key an index: the ``--index`` is ``add``'s, not the global
    option, even though the group ``keys`` itself has no such option.
    """
    own = table(command.params)
    i = 0
    while getattr(command, "commands", None) and i < len(rest):
        arg = rest[i]
        if arg == "--":
            break
        if arg.startswith("-"):
            param, attached = option_of(arg, table(command.params))
            i += width(param, attached) if param is not None else 1
            continue
        command = command.commands.get(arg)
        if command is None:
            break
        own.update(table(command.params))
        i += 1
    return own
