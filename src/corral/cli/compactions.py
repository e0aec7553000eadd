"""`corral compactions`: the trims of a conversation's prompt, switched off ("Show full") and on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.compaction import Compactions

__all__ = ["app"]

app = typer.Typer(
    help="Compactions: what the agent's prompt leaves out, switched off and on.",
    no_args_is_help=True,
)


def _compactions(platform: Platform) -> Compactions:
    from corral.runtime.compaction import Compactions

    return platform.services.require(Compactions)


def _show(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no compactions")
        return
    table = Table("id", "action", "by", "targets", "tokens saved", "applied", "reason")
    for row in rows:
        if row["source"] == "summarize":
            targets = f"rows {row['first_seq']} to {row['last_seq']}"
        else:
            targets = ", ".join(
                f"tool_use_id {t['tool_use_id']}" if t["tool_use_id"] else f"sequence {t['seq']}"
                for t in row["targets"]
            )
        table.add_row(
            row["id"],
            "/summarize" if row["source"] == "summarize" else row["action"],
            row["by"],
            targets,
            f"{row['tokens_saved']:,} ({row['tokenizer']})",
            "yes" if row["applied"] else "no (shown in full)",
            row["reason"] or "-",
        )
    console.print(table)


@app.command("list")
def list_compactions(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Every compaction of the conversation and whether it applies now."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return await _compactions(platform).list_compactions(conversation_id)

    rows = run_with_platform(ctx, work)
    _show(rows, as_json)


@app.command("show-full")
def show_full(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    compaction_id: Annotated[
        str | None, typer.Argument(help="Only this compaction (default: all of them).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Switch compactions off: the agent reads those rows in full again from its next step."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        service = _compactions(platform)
        if compaction_id is None:
            return await service.show_full(conversation_id)
        await service.set_applied(conversation_id, compaction_id, False)
        return await service.list_compactions(conversation_id)

    rows = run_with_platform(ctx, work)
    _show(rows, as_json)


@app.command("apply")
def apply(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    compaction_id: Annotated[str, typer.Argument(help="The compaction to switch on again.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Switch a compaction on again."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        service = _compactions(platform)
        await service.set_applied(conversation_id, compaction_id, True)
        return await service.list_compactions(conversation_id)

    rows = run_with_platform(ctx, work)
    _show(rows, as_json)
