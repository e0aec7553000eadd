"""`corral inbox`: every decision a run waits on you for (approvals, questions…)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["inbox"]

_ANSWER_WITH = {
    "approval": "corral approvals decide {id} approve|deny",
    "question": "corral questions answer {id} …",
}


def inbox(
    ctx: typer.Context,
    every: Annotated[
        bool, typer.Option("--all", help="Also the decided, expired and closed ones.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Your pending decisions across conversations, oldest first, and how to answer each."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return await platform.inbox(status=None if every else "pending")

    listed = run_with_platform(ctx, work)
    if as_json:
        print_json(listed)
        return
    if not listed:
        console.print("nothing waits for you")
        return
    table = Table("id", "kind", "status", "what", "expires")
    table.columns[0].no_wrap = True
    for d in listed:
        table.add_row(d["id"], d["kind"], d["status"], d["summary"], (d["expires_at"] or "")[:10])
    console.print(table)
    kinds = sorted({d["kind"] for d in listed if d["status"] == "pending"} & set(_ANSWER_WITH))
    for kind in kinds:
        console.print(f"answer a {kind}: {_ANSWER_WITH[kind].format(id='ID')}", highlight=False)
