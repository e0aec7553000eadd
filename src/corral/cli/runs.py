"""`corral runs`: look at runs, stop one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform
from corral.cli._turns import runtime

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Runs of the agent loop.", no_args_is_help=True)


@app.command("list")
def list_runs(
    ctx: typer.Context,
    conversation: Annotated[str | None, typer.Option(help="Only this conversation's runs.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Recent runs."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        rt = runtime(platform)
        if conversation is not None:
            await rt.conversation(conversation)
        return [r.to_json() for r in await rt.runs.list_runs(conversation_id=conversation)]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "conversation", "status", "reason", "steps", "trigger")
    for row in rows:
        table.add_row(
            row["id"],
            row["conversation_id"],
            row["status"],
            row["reason"] or "-",
            f"{row['steps']}/{row['step_budget']}",
            row["trigger"],
        )
    console.print(table)


@app.command("show")
def show(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """One run, as JSON (with ``budget``: spent against limit for each limit set)."""

    async def work(platform: Platform) -> dict[str, Any]:
        rt = runtime(platform)
        shown = (await rt.run(run_id)).to_json()
        shown["budget"] = await rt.run_budget(run_id)
        return shown

    print_json(run_with_platform(ctx, work))


@app.command("stop")
def stop(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """Stop a run and what it started (in another process: at its next step)."""

    async def work(platform: Platform) -> dict[str, Any]:
        return (await runtime(platform).stop(run_id)).to_json()

    run = run_with_platform(ctx, work)
    console.print(f"run {run['id']}: {run['status']}", highlight=False)
