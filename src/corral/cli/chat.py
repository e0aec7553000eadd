"""`corral chat`: talk to an agent; the turn streams as it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._run import console, print_json, run_with_platform
from corral.cli._turns import TurnPrinter, exit_code, follow, print_result, runtime

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.results import RunResult

__all__ = ["chat"]


def chat(
    ctx: typer.Context,
    message: Annotated[str, typer.Argument(help="What to say.")],
    agent: Annotated[str | None, typer.Option(help="Agent to talk to (default: default).")] = None,
    model: Annotated[
        str | None, typer.Option(help="provider:model, e.g. anthropic:claude-sonnet-5-5.")
    ] = None,
    profile: Annotated[str | None, typer.Option(help="safe, balanced or auto.")] = None,
    conversation: Annotated[
        str | None, typer.Option("--conversation", "-c", help="Continue this conversation.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the turn as JSON.")] = False,
) -> None:
    """Send a message and run the turn. Exit 0 finished, 3 waiting for approval, 1 else."""

    async def work(platform: Platform) -> RunResult:
        rt = runtime(platform)
        conversation_id = conversation
        if conversation_id is None:
            started = await rt.start_conversation(agent=agent, model=model, profile=profile)
            conversation_id = started.id
            if not as_json:
                console.print(f"[dim]conversation {conversation_id}[/]")

        async def turn() -> RunResult:
            return await rt.chat(
                message,
                agent=agent,
                model=model,
                profile=profile,
                conversation_id=conversation_id,
            )

        printer = None if as_json else TurnPrinter(console)
        return await follow(platform, conversation_id, printer, turn)

    result = run_with_platform(ctx, work)
    if as_json:
        print_json(result.to_json())
    else:
        print_result(console, result)
    raise typer.Exit(exit_code(result))
