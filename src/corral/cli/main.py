"""The `corral` command: the root group, its global options and where each command lives.

Each command group is the ``app`` of the module named like it (``corral shells`` is
``cli/shells.py``); each single command is the function of the module named like it
(``corral check-command`` is ``cli/check_command.py``). :data:`COMMANDS` names them; a
command's module is imported and its click command built only when it runs or a help lists
it, so ``corral tools list`` builds the `tools` group alone and ``corral --help`` stays
quick. Command modules import the platform only when a command runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._global_options import CliState, CorralGroup
from corral.cli._lazy import LazyCommands, build_command

if TYPE_CHECKING:
    from typer import _click

__all__ = ["COMMANDS", "app"]

COMMANDS: dict[str, str] = {  # name: "module:attribute" under corral.cli
    "serve": "serve:serve",
    "worker": "worker:worker",
    "trace": "trace:trace",
    "check-command": "check_command:check_command",
    "host-broker": "host_broker:host_broker",
    "doctor": "doctor:doctor",
    "chat": "chat:chat",
    "summarize": "summarize:summarize",
    "rewind": "rewind:rewind",
    "fork": "fork:fork",
    "inbox": "inbox:inbox",
    "tools": "tools:app",
    "approvals": "approvals:app",
    "settings": "settings:app",
    "hooks": "hooks:app",
    "rules": "rules:app",
    "users": "users:app",
    "roles": "roles:app",
    "sessions": "sessions:app",
    "tokens": "tokens:app",
    "sources": "sources:app",
    "agents": "agents:app",
    "packages": "packages:app",
    "shells": "shells:app",
    "egress": "egress:app",
    "conversations": "conversations:app",
    "runs": "runs:app",
    "delegates": "delegates:app",
    "workflows": "workflows:app",
    "questions": "questions:app",
    "goals": "goals:app",
    "compactions": "compactions:app",
    "credentials": "credentials:app",
    "connect": "connect:app",
    "skills": "skills:app",
    "mcp": "mcp:app",
    "channels": "channels:app",
}
"""Every command of the root, in the order of its help: single commands, then groups."""


class RootGroup(CorralGroup):
    """The root: its commands are :data:`COMMANDS`, each built on first lookup."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        given = self.commands
        self.commands = LazyCommands(
            COMMANDS,
            build=lambda name, target: build_command(app, name, target),
            on_build=self.repeat_options_on,
        )
        self.commands.update(given)

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.commands)


app = typer.Typer(
    cls=RootGroup,
    help="Corral: an agent platform whose tools are the product.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="CORRAL_DATA_DIR",
            help="Folder holding Corral's state (default ./corral-data).",
        ),
    ] = None,
) -> None:
    # Every option here is global: CorralGroup repeats it on each subcommand, and a value
    # given there replaces the field of the same name in CliState.
    ctx.obj = CliState(data_dir=data_dir)
    if any(name.startswith("OTEL_") for name in os.environ):
        from corral.tracing import configure_from_environment

        configure_from_environment()  # spans when OTEL_* names an exporter (corral[otel])
