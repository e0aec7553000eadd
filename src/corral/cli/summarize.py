"""`corral summarize`: /summarize, a summary that stands in for a conversation's history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["summarize"]


def summarize(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")],
    model: Annotated[
        str | None, typer.Option(help="provider:model to write it (default: the conversation's).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """/summarize: the model summarizes the whole conversation so far, and the summary stands
    in for it in the agent's prompt (switchable with `corral compactions show-full`)."""

    async def work(platform: Platform) -> dict[str, Any]:
        from corral.runtime.compaction import Compactions

        return await platform.services.require(Compactions).summarize(conversation_id, model=model)

    made = run_with_platform(ctx, work)
    if as_json:
        print_json(made)
        return
    console.print(made["summary"], highlight=False, markup=False)
    console.print(
        f"[dim]compaction {made['id']}: rows {made['first_seq']} to {made['last_seq']} now read "
        f"as this summary; about {made['tokens_saved']:,} tokens saved ({made['tokenizer']})[/]",
        highlight=False,
    )
