"""`corral shells`: list background shells, read their output, stop them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, err_console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.shell.service import ShellService

__all__ = ["app"]

app = typer.Typer(help="Background shells: list, output, stop.", no_args_is_help=True)

UserOption = Annotated[str | None, typer.Option(help="Act as this user (default: the owner).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _shells(platform: Platform) -> ShellService:
    from corral.shell.service import ShellService

    return platform.services.require(ShellService)


@app.command("list")
def list_shells(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="Only running, exited, lost…")] = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Your background shells, newest first."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        caller = await platform.caller(user)
        store = _shells(platform).store
        return [r.to_json() for r in await store.find(user_id=caller.user_id, status=status)]

    shells = run_with_platform(ctx, work)
    if as_json:
        print_json(shells)
        return
    if not shells:
        console.print("no background shells")
        return
    table = Table("id", "status", "exit", "started", "command")
    for shell in shells:
        command = shell["command"]
        table.add_row(
            shell["id"],
            shell["status"],
            "-" if shell["exit_code"] is None else str(shell["exit_code"]),
            shell["started_at"][:19],
            command if len(command) < 60 else command[:57] + "…",
        )
    console.print(table)


@app.command("output")
def output(
    ctx: typer.Context,
    shell_id: Annotated[str, typer.Argument(help="The shell's id (sh_…).")],
    after: Annotated[int, typer.Option(help="Only rows after this sequence number.")] = 0,
    limit: Annotated[int, typer.Option(help="Most rows to print.")] = 5000,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """The shell's output log (one JSON row per captured chunk), as text or rows."""

    async def work(platform: Platform) -> dict[str, Any]:
        caller = await platform.caller(user)
        background = _shells(platform).background
        return await background.output(shell_id, caller, after=after, limit=limit)

    result = run_with_platform(ctx, work)
    if as_json:
        print_json(result)
        return
    for row in result["rows"]:
        typer.echo(row.get("text", ""), nl=False, err=row.get("stream") == "stderr")
    shell = result["shell"]
    err_console.print(
        f"[dim]-- {shell['id']} {shell['status']}"
        + (f", exit code {shell['exit_code']}" if shell["exit_code"] is not None else "")
        + f"; next --after {result['next_after']}[/]",
        highlight=False,
    )


@app.command("stop")
def stop(
    ctx: typer.Context,
    shell_id: Annotated[str, typer.Argument(help="The shell's id (sh_…).")],
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """End a shell you started: SIGTERM to its process group, then SIGKILL after a grace."""

    async def work(platform: Platform) -> dict[str, Any]:
        caller = await platform.caller(user)
        record = await _shells(platform).background.stop(shell_id, caller)
        return record.to_json()

    record = run_with_platform(ctx, work)
    if as_json:
        print_json(record)
    else:
        console.print(f"{record['id']}: {record['status']}", highlight=False)
