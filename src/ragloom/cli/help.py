"""Help that shows options as a terminal user writes them: ``--json``, ``--top-k N``, ``QUERY``.

typer's help prints each parameter's Python type (``--json <bool>``, ``<list[Path]>``); click's
convention, which this restores, is nothing after a flag and a short upper-case placeholder
after an option that takes a value.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

#: The placeholder shown after an option, by the Python type of its value.
_PLACEHOLDERS = {"int": "N", "float": "NUMBER", "Path": "PATH"}


class PlainHelpGroup(TyperGroup):
    """The ragloom command group: its commands' help shows flags and placeholders, not types."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        plain_help(self)
        return super().main(*args, **kwargs)


def plain_help(command: Any) -> None:
    """Give every parameter of ``command`` and its subcommands a click-style placeholder."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            _argument(param)
        elif isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag or getattr(param, "count", False) else placeholder(param)
    _flag_help_option(command)
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)


def _flag_help_option(command: Any) -> None:
    """``--help`` is made when help is asked for, not kept in ``params``: mark it a flag then."""
    if getattr(command, "_plain_help", False):
        return
    made = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = made(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option
    command._plain_help = True


def placeholder(option: TyperOption) -> str:
    kind = option.bare_type().removeprefix("list[").removesuffix("]")
    if kind in _PLACEHOLDERS:
        return _PLACEHOLDERS[kind]
    return (option.name or "value").upper().replace("_", "-")


def _argument(argument: TyperArgument) -> None:
    name = (argument.name or "arg").upper()
    many = argument.nargs != 1
    argument.metavar = name + ("..." if many else "")
    argument.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
    shown = argument.metavar if argument.required else f"[{argument.metavar}]"
    argument._usage_display_name = lambda: shown  # type: ignore[method-assign]
