"""Global options: given before or after the subcommand, the same choice.

``corral --data-dir D shells list`` and ``corral shells list --data-dir D`` both open D.
The root callback's options are the global ones: it stores what they chose as a
:class:`CliState` on ``ctx.obj``, and :class:`CorralGroup` repeats each of them on every
subcommand, where a value given there replaces the root's. Only the root reads environment
variables, so ``CORRAL_DATA_DIR`` never overrides a ``--data-dir`` typed on the line.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import typer
from typer.core import TyperGroup, TyperOption

if TYPE_CHECKING:
    from typer._click import Command

__all__ = ["GLOBAL_PANEL", "CliState", "CorralGroup", "cli_state"]

GLOBAL_PANEL = "Global options"
"""The help panel listing the global options on a subcommand."""


@dataclass(slots=True, kw_only=True)
class CliState:
    """What the global options chose for this invocation; one field per root option."""

    data_dir: Path | None = None
    """The folder holding Corral's state; None for the settings' default (./corral-data)."""


def cli_state(ctx: typer.Context) -> CliState:
    """The invocation's :class:`CliState`: the root's, or a default one outside the root."""
    return ctx.ensure_object(CliState)


class _Context(Protocol):
    """What an option callback uses of the context click hands it."""

    def ensure_object(self, object_type: type[CliState]) -> CliState: ...


class _Param(Protocol):
    @property
    def name(self) -> str | None: ...


def _override(ctx: _Context, param: _Param, value: object) -> None:
    """A global option given after a subcommand replaces what the root chose."""
    if value is not None and param.name is not None:
        setattr(ctx.ensure_object(CliState), param.name, value)


class CorralGroup(TyperGroup):
    """The root group: every command below it, at any depth, also takes the root's options."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        # The root's own options, before typer appends its completion options to the root.
        self._global = [option for option in self.params if isinstance(option, TyperOption)]
        self._repeat_options(self)

    def _repeat_options(self, group: TyperGroup) -> None:
        for command in group.commands.values():
            self.repeat_options_on(command)

    def repeat_options_on(self, command: Command) -> None:
        """Give ``command`` and every command below it the root's options."""
        command.params.extend(self._repeated_options())
        if isinstance(command, TyperGroup):
            self._repeat_options(command)

    def _repeated_options(self) -> list[TyperOption]:
        """Fresh copies of the root's options, as a subcommand takes them."""
        repeated = []
        for option in self._global:
            copied = copy.copy(option)
            copied.envvar = None
            copied.expose_value = False
            copied.callback = _override
            copied.rich_help_panel = GLOBAL_PANEL
            repeated.append(copied)
        return repeated
