"""The `corral` command: the root group, its global options and where each command lives.

Each command group is the ``app`` of the module named like it (``corral shells`` is
``cli/shells.py``); each single command is the function of the module named like it
(``corral check-command`` is ``cli/check_command.py``). Command modules import the platform
only when a command runs, so ``corral --help`` stays quick.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from corral.cli import (
    agents,
    approvals,
    channels,
    chat,
    check_command,
    compactions,
    connect,
    conversations,
    credentials,
    delegates,
    doctor,
    egress,
    fork,
    goals,
    hooks,
    host_broker,
    inbox,
    mcp,
    packages,
    questions,
    rewind,
    roles,
    rules,
    runs,
    serve,
    sessions,
    settings,
    shells,
    skills,
    sources,
    summarize,
    tokens,
    tools,
    trace,
    users,
    worker,
    workflows,
)
from corral.cli._global_options import CliState, CorralGroup

__all__ = ["app"]

app = typer.Typer(
    cls=CorralGroup,
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


app.command("serve")(serve.serve)
app.command("worker")(worker.worker)
app.command("trace")(trace.trace)
app.add_typer(tools.app, name="tools")
app.add_typer(approvals.app, name="approvals")
app.add_typer(settings.app, name="settings")
app.add_typer(hooks.app, name="hooks")
app.add_typer(rules.app, name="rules")
app.add_typer(users.app, name="users")
app.add_typer(roles.app, name="roles")
app.add_typer(sessions.app, name="sessions")
app.add_typer(tokens.app, name="tokens")
app.add_typer(sources.app, name="sources")
app.add_typer(agents.app, name="agents")
app.add_typer(packages.app, name="packages")
app.add_typer(shells.app, name="shells")
app.add_typer(egress.app, name="egress")
app.command("check-command")(check_command.check_command)
app.command("host-broker")(host_broker.host_broker)
app.command("doctor")(doctor.doctor)
app.command("chat")(chat.chat)
app.add_typer(conversations.app, name="conversations")
app.add_typer(runs.app, name="runs")
app.add_typer(delegates.app, name="delegates")
app.add_typer(workflows.app, name="workflows")
app.add_typer(questions.app, name="questions")
app.add_typer(goals.app, name="goals")
app.add_typer(compactions.app, name="compactions")
app.add_typer(credentials.app, name="credentials")
app.add_typer(connect.app, name="connect")
app.add_typer(skills.app, name="skills")
app.add_typer(mcp.app, name="mcp")
app.add_typer(channels.app, name="channels")
app.command("summarize")(summarize.summarize)
app.command("rewind")(rewind.rewind)
app.command("fork")(fork.fork)
app.command("inbox")(inbox.inbox)
