"""`corral approvals`: answer parked calls."""

from __future__ import annotations

from typing import Annotated, cast

import typer
from rich.table import Table

from corral.cli._run import console, err_console, print_json, run_with_platform
from corral.errors import UsageError
from corral.platform import Platform
from corral.platform.approvals import ApprovalRecord, Decision
from corral.tools.results import ToolResult

app = typer.Typer(help="List and decide pending approvals.", no_args_is_help=True)


@app.command("list")
def list_approvals(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Your pending approvals."""

    async def work(platform: Platform) -> list[ApprovalRecord]:
        return await platform.pending_approvals()

    records = run_with_platform(work)
    if as_json:
        print_json([r.to_json() for r in records])
        return
    if not records:
        console.print("no pending approvals")
        return
    table = Table("id", "tool", "agent", "run", "reason")
    for r in records:
        table.add_row(r.id, r.tool, r.agent, r.run_id or "-", r.reason)
    console.print(table)


@app.command("decide")
def decide(
    approval_id: Annotated[str, typer.Argument(help="The approval's id.")],
    decision: Annotated[str, typer.Argument(help="approve or deny")],
    note: Annotated[str | None, typer.Option(help="A note for the agent.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole result.")] = False,
) -> None:
    """Approve (the call runs now) or deny a pending approval."""

    async def work(platform: Platform) -> ToolResult:
        if decision not in ("approve", "deny"):
            raise UsageError(f"decision must be 'approve' or 'deny', not {decision!r}")
        return await platform.decide_approval(approval_id, cast(Decision, decision), note=note)

    result = run_with_platform(work)
    if as_json:
        print_json(result.to_json())
    elif result.is_error:
        err_console.print(result.text, highlight=False, markup=False)
    else:
        console.print(result.text, highlight=False, markup=False)
