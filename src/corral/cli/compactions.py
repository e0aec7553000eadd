"""`corral compactions`: the trims of a conversation's prompt, "Show full", and /summarize."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform
from corral.platform import Platform
from corral.runtime.compaction import compactions_of

__all__ = ["app", "summarize"]

app = typer.Typer(
    help="Compactions: what the agent's prompt leaves out, switched off and on.",
    no_args_is_help=True,
)


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
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Every compaction of the conversation and whether it applies now."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        return await compactions_of(platform).list_compactions(conversation_id)

    rows = run_with_platform(work)
    _show(rows, as_json)


@app.command("show-full")
def show_full(
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    compaction_id: Annotated[
        str | None, typer.Argument(help="Only this compaction (default: all of them).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Switch compactions off: the agent reads those rows in full again from its next step."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        service = compactions_of(platform)
        if compaction_id is None:
            return await service.show_full(conversation_id)
        await service.set_applied(conversation_id, compaction_id, False)
        return await service.list_compactions(conversation_id)

    rows = run_with_platform(work)
    _show(rows, as_json)


@app.command("apply")
def apply(
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    compaction_id: Annotated[str, typer.Argument(help="The compaction to switch on again.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Switch a compaction on again."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        service = compactions_of(platform)
        await service.set_applied(conversation_id, compaction_id, True)
        return await service.list_compactions(conversation_id)

    rows = run_with_platform(work)
    _show(rows, as_json)


def summarize(
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    model: Annotated[
        str | None, typer.Option(help="provider:model to write it (default: the conversation's).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """/summarize: the model summarizes the whole conversation so far, and the summary stands
    in for it in the agent's prompt (switchable with `corral compactions show-full`)."""

    async def work(platform: Platform) -> dict[str, Any]:
        return await compactions_of(platform).summarize(conversation_id, model=model)

    made = run_with_platform(work)
    if as_json:
        print_json(made)
        return
    console.print(made["summary"], highlight=False, markup=False)
    console.print(
        f"[dim]compaction {made['id']}: rows {made['first_seq']} to {made['last_seq']} now read "
        f"as this summary; about {made['tokens_saved']:,} tokens saved ({made['tokenizer']})[/]",
        highlight=False,
    )
