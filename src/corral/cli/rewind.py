"""`corral rewind CONVERSATION --to STEP --files-only [--force]`: put back the files a
conversation's calls changed from one step on, refusing when something else changed them
since (listed) unless forced. Without ``--to``: the steps it can go back before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, err_console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["rewind"]


def rewind(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(help="The conversation to rewind.")],
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="The step to go back before: its number (1 is the first call that "
            "changed files) or its checkpoint id. Without it: the steps are listed.",
        ),
    ] = None,
    files_only: Annotated[
        bool, typer.Option("--files-only", help="Put the files back; keep the conversation.")
    ] = False,
    conversation_only: Annotated[
        bool,
        typer.Option("--conversation-only", help="Hide the later rows; keep the files."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite files something else changed since.")
    ] = False,
    user: Annotated[str | None, typer.Option(help="Act as this user (default: the owner).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Rewind a conversation's files to how they were before a step."""
    from corral.errors import UsageError

    if files_only and conversation_only:
        raise typer.BadParameter("--files-only and --conversation-only exclude each other")

    async def work(platform: Platform) -> dict[str, Any]:
        from corral.shell.checkpoints.rewind import rewind_files
        from corral.shell.service import ShellService

        assert to is not None
        if not files_only:
            raise UsageError(
                "rewinding the conversation itself is not available yet; --files-only puts "
                "the files back and keeps the conversation"
            )
        caller = await platform.caller(user)
        await platform.conversation(conversation, user=user)
        service = platform.services.require(ShellService)
        outcome = await rewind_files(
            service.checkpoints,
            conversation,
            to,
            writable=await service.writable_roots(caller),
            force=force,
        )
        return {
            "to_step": outcome.to_step,
            "steps_undone": [s.step for s in outcome.undone],
            "refused": outcome.refused,
            "conflicts": [c.describe() for c in outcome.conflicts],
            "paths_restored": outcome.restored,
            "unrestored": outcome.unrestored,
        }

    if to is None:
        _list_steps(ctx, conversation, user, as_json)
        return
    result = run_with_platform(ctx, work)
    if as_json:
        print_json(result)
    elif result["refused"]:
        err_console.print(
            "[bold red]refused:[/] changed since the checkpoint by something else "
            "(--force overwrites them):",
            highlight=False,
        )
        for line in result["conflicts"]:
            err_console.print(f"  {line}", highlight=False, soft_wrap=True)
    else:
        steps = result["steps_undone"]
        console.print(
            f"rewound to before step {result['to_step']}: {len(steps)} step(s) undone, "
            f"{result['paths_restored']} path(s) put back",
            highlight=False,
        )
        for line in result["conflicts"]:
            console.print(f"  overwritten: {line}", highlight=False, soft_wrap=True)
        for path in result["unrestored"]:
            console.print(f"  not restorable (unreadable then): {path}", highlight=False)
    if result["refused"]:
        raise typer.Exit(1)


def _list_steps(ctx: typer.Context, conversation: str, user: str | None, as_json: bool) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        from corral.shell.service import ShellService

        await platform.conversation(conversation, user=user)
        rows = platform.services.require(ShellService).checkpoints.rows
        steps = [] if rows is None else await rows.for_conversation(conversation)
        return [
            {
                "step": s.step,
                "id": s.call_id,
                "tool": s.tool,
                "files_changed": s.files_changed,
                "bytes": s.bytes,
                "at": s.created_at.isoformat(timespec="seconds"),
            }
            for s in steps
        ]

    steps = run_with_platform(ctx, work)
    if as_json:
        print_json(steps)
        return
    if not steps:
        console.print("no checkpoints in this conversation")
        return
    table = Table("step", "at", "tool", "files", "bytes", "id")
    for s in steps:
        table.add_row(
            str(s["step"]),
            s["at"][:19],
            s["tool"],
            str(s["files_changed"]),
            str(s["bytes"]),
            s["id"],
        )
    console.print(table)
