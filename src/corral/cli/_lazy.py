"""The root's commands, each built the first time it is looked up.

Typer builds a command's parameters from its function's signature and type hints on every
invocation; eagerly that was every command of every group, with all 40 command modules
imported, for each `corral ...` run. Here the root knows its commands by name and where
they live; `corral tools list` imports `cli/tools.py` and builds the `tools` group only.
Listing them (`corral --help`, completion, a mistyped name's suggestions) names them all;
the help builds each, as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING

import typer
from typer.main import get_command_from_info, get_group_from_info

if TYPE_CHECKING:
    from typer import _click

__all__ = ["LazyCommands", "build_command"]


class LazyCommands(MutableMapping[str, "_click.Command"]):
    """A group's commands by name, in the order given: a name's command is built by
    ``build(name)`` on its first lookup, then ``on_build`` is given it, once."""

    def __init__(
        self,
        names: Mapping[str, str],
        build: Callable[[str, str], _click.Command],
        on_build: Callable[[_click.Command], None],
    ) -> None:
        self._targets = dict(names)
        self._build = build
        self._on_build = on_build
        self._built: dict[str, _click.Command] = {}
        self._order = list(names)

    def __getitem__(self, name: str) -> _click.Command:
        command = self._built.get(name)
        if command is None:
            target = self._targets[name]  # KeyError: no such command
            command = self._build(name, target)
            self._on_build(command)
            self._built[name] = command
        return command

    def __setitem__(self, name: str, command: _click.Command) -> None:
        if name not in self._targets and name not in self._built:
            self._order.append(name)
        self._targets.pop(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._targets and name not in self._built:
            raise KeyError(name)
        self._targets.pop(name, None)
        self._built.pop(name, None)
        self._order.remove(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._targets or name in self._built


def build_command(root: typer.Typer, name: str, target: str) -> _click.Command:
    """The command ``name`` of ``root`` from ``target`` (``module:attribute`` under
    ``corral.cli``), built as ``root.add_typer(app, name=name)`` (a Typer app) or
    ``root.command(name)(function)`` would have built it."""
    module, attribute = target.split(":")
    value = getattr(importlib.import_module(f"corral.cli.{module}"), attribute)
    holder = typer.Typer()
    if isinstance(value, typer.Typer):
        holder.add_typer(value, name=name)
        return get_group_from_info(
            holder.registered_groups[0],
            pretty_exceptions_short=root.pretty_exceptions_short,
            rich_markup_mode=root.rich_markup_mode,
            suggest_commands=root.suggest_commands,
        )
    holder.command(name)(value)
    return get_command_from_info(
        holder.registered_commands[0],
        pretty_exceptions_short=root.pretty_exceptions_short,
        rich_markup_mode=root.rich_markup_mode,
    )
