"""`corral approvals`: answer parked calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table

from corral.cli._run import console, err_console, print_json, run_with_platform
from corral.cli._turns import TurnPrinter, follow, runtime
from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.kernel.approvals import ApprovalRecord, Decision
    from corral.kernel.remembered_rules import Scope
    from corral.platform import Platform
    from corral.platform.rules import Remember
    from corral.runtime.runs import RunRecord
    from corral.tools.results import ToolResult

__all__ = ["app"]

app = typer.Typer(help="List and decide pending approvals.", no_args_is_help=True)


@app.command("list")
def list_approvals(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Your pending approvals."""

    async def work(
        platform: Platform,
    ) -> list[tuple[ApprovalRecord, dict[str, list[str]] | None]]:
        records = await platform.pending_approvals()
        return [(r, await platform.rules.proposal(r)) for r in records]

    listed = run_with_platform(ctx, work)
    if as_json:
        print_json([{**r.to_json(), "remember": proposal} for r, proposal in listed])
        return
    if not listed:
        console.print("no pending approvals")
        return
    table = Table("id", "tool", "agent", "run", "reason", "--remember family")
    for r, proposal in listed:
        family = ", ".join(proposal["family"]) if proposal else ""
        table.add_row(r.id, r.tool, r.agent, r.run_id or "-", r.reason, family)
    console.print(table)


@app.command("decide")
def decide(
    ctx: typer.Context,
    approval_id: Annotated[str, typer.Argument(help="The approval's id.")],
    decision: Annotated[str, typer.Argument(help="approve or deny")],
    note: Annotated[str | None, typer.Option(help="A note for the agent.")] = None,
    remember: Annotated[
        str | None,
        typer.Option(
            help="Keep the answer as rules: 'exact' (these commands) or 'family' (their "
            "prefixes, e.g. `git log`); a denial is kept as forbidden with the note."
        ),
    ] = None,
    scope: Annotated[
        str, typer.Option(help="Who remembered rules cover: agent, user or project (admins).")
    ] = "agent",
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole result.")] = False,
) -> None:
    """Approve or deny a pending approval; a parked run continues (and runs the approved
    call in its own job), a call outside any run runs now."""

    async def work(platform: Platform) -> tuple[ToolResult, dict[str, Any] | None]:
        if decision not in ("approve", "deny"):
            raise UsageError(f"decision must be 'approve' or 'deny', not {decision!r}")
        chosen = cast("Decision", decision)
        decider = await platform.caller()
        platform.rules.check_choice(remember, scope, decider)
        kept = cast("Remember | None", remember)
        area = cast("Scope", scope)
        record = await platform.approvals.get(approval_id)
        run = await _run_of(platform, record.run_id)
        if run is None:
            decided = await platform.decide_approval(
                approval_id, chosen, surface="cli", note=note, remember=kept, scope=area
            )
            # Outside any run the call runs as a task of this process: wait for its result.
            return await platform.approval_result(approval_id) or decided, None

        async def decide_it() -> ToolResult:
            return await platform.decide_approval(
                approval_id, chosen, surface="cli", note=note, remember=kept, scope=area
            )

        printer = None if as_json else TurnPrinter(console)
        result = await follow(platform, run.conversation_id, printer, decide_it)
        # The run's job ran the approved call meanwhile (here, or a worker): its result.
        result = await platform.approval_result(approval_id) or result
        return result, (await runtime(platform).runs.get(run.id)).to_json()

    result, run = run_with_platform(ctx, work)
    if as_json:
        print_json({**result.to_json(), "run": run})
    elif run is not None:
        reason = f" ({run['reason']})" if run["reason"] else ""
        console.print(f"run {run['id']}: {run['status']}{reason}", highlight=False)
    elif result.is_error:
        err_console.print(result.text, highlight=False, markup=False)
    else:
        console.print(result.text, highlight=False, markup=False)


async def _run_of(platform: Platform, run_id: str | None) -> RunRecord | None:
    """The runtime's run an approval belongs to, if any."""
    if run_id is None:
        return None
    return await runtime(platform).runs.find(run_id)
