"""The `corral` command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corral.cli import (
    agents_cmd,
    approvals,
    broker_cmd,
    chat_cmd,
    check_cmd,
    compactions_cmd,
    config_cmd,
    conversations_cmd,
    goals_cmd,
    identity_cmd,
    meta_cmd,
    questions_cmd,
    runs_cmd,
    serve,
    settings_cmd,
    shells_cmd,
    tools,
)
from corral.cli._run import state

app = typer.Typer(
    help="Corral: an agent platform whose tools are the product.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="CORRAL_DATA_DIR",
            help="Folder holding Corral's state (default ./corral-data).",
        ),
    ] = None,
) -> None:
    state.data_dir = data_dir


app.command("serve")(serve.serve)
app.add_typer(tools.app, name="tools")
app.add_typer(approvals.app, name="approvals")
app.add_typer(settings_cmd.app, name="settings")
app.add_typer(identity_cmd.users, name="users")
app.add_typer(identity_cmd.roles, name="roles")
app.add_typer(identity_cmd.tokens, name="tokens")
app.add_typer(config_cmd.sources, name="sources")
app.add_typer(config_cmd.agents, name="agents")
app.add_typer(config_cmd.packages, name="packages")
app.add_typer(shells_cmd.app, name="shells")
app.command("check-command")(check_cmd.check_command)
app.command("host-broker")(broker_cmd.host_broker)
app.command("chat")(chat_cmd.chat)
app.add_typer(conversations_cmd.app, name="conversations")
app.add_typer(runs_cmd.app, name="runs")
config_cmd.agents.command("set")(agents_cmd.set_agent)
app.add_typer(questions_cmd.app, name="questions")
app.add_typer(goals_cmd.app, name="goals")
app.add_typer(compactions_cmd.app, name="compactions")
app.command("summarize")(compactions_cmd.summarize)
conversations_cmd.app.command("meta")(meta_cmd.meta)
