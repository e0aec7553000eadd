"""`corral delegates`: the delegate runs of a conversation; show, stop, continue one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.delegation import Delegation

__all__ = ["app"]

app = typer.Typer(
    help="Delegate runs (subagents): list, show, stop, continue.", no_args_is_help=True
)


def _delegation(platform: Platform) -> Delegation:
    from corral.runtime.delegation import Delegation

    return platform.services.require(Delegation)


@app.command("list")
def list_delegates(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation that delegated.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The delegate runs a conversation started, newest first."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return await _delegation(platform).list_delegates(conversation_id)

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("run", "status", "steps", "background", "task")
    for row in rows:
        table.add_row(
            row["run_id"],
            row["status"],
            str(row["steps"]),
            "yes" if row["background"] else "no",
            row["task"][:60],
        )
    console.print(table)


@app.command("show")
def show(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """One delegate run with its answer, as JSON."""

    async def work(platform: Platform) -> dict[str, Any]:
        return await _delegation(platform).show(run_id)

    print_json(run_with_platform(ctx, work))


@app.command("stop")
def stop(ctx: typer.Context, run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """Stop a delegate run and its children; it reports what it managed to do."""

    async def work(platform: Platform) -> dict[str, Any]:
        return (await _delegation(platform).stop(run_id)).to_json()

    row = run_with_platform(ctx, work)
    console.print(f"{row['id']}: {row['status']} ({row['detail']})", highlight=False)


@app.command("continue")
def continue_run(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="An ended delegate run.")],
    instruction: Annotated[str, typer.Argument(help="What the subagent should do next.")],
) -> None:
    """Give an ended delegate run a further instruction; it reports into the conversation."""

    async def work(platform: Platform) -> dict[str, Any]:
        return (await _delegation(platform).continue_run(run_id, instruction)).to_json()

    row = run_with_platform(ctx, work)
    console.print(f"continued as run {row['id']} ({row['status']})", highlight=False)
