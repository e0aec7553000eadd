"""`corral rewind CONVERSATION --to STEP [--files-only|--conversation-only] [--force]
[--preview] [--json]`: go back to before a step, putting back the files the conversation's
calls changed from it on and hiding that call's model turn and what followed from the model;
refused when something else changed the files since (listed) unless forced, and while a run
of the conversation is running or parked. Without ``--to``: the steps it can go back
before."""

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
            help="Where to go back to, the state before it: a step number (1 is the first "
            "call that changed files), a checkpoint id or any tool call id. Without it: "
            "the steps are listed.",
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
    preview: Annotated[
        bool,
        typer.Option(
            "--preview",
            "--dry-run",
            help="Say what the rewind would do (files with diffs, rows hidden, conflicts); "
            "change nothing.",
        ),
    ] = False,
    user: Annotated[str | None, typer.Option(help="Act as this user (default: the owner).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Rewind a conversation to before a step: its files and the history the model sees
    (both unless --files-only or --conversation-only)."""
    if files_only and conversation_only:
        raise typer.BadParameter("--files-only and --conversation-only exclude each other")
    if to is None:
        if files_only or conversation_only or force or preview:
            raise typer.BadParameter("say where to rewind to with --to STEP")
        _list_steps(ctx, conversation, user, as_json)
        return
    parts = {"files": not conversation_only, "conversation": not files_only}

    async def work(platform: Platform) -> dict[str, Any]:
        if preview:
            shown = await platform.rewind_preview(conversation, to, user=user, **parts)
            return shown.to_json()
        done = await platform.rewind(conversation, to, force=force, user=user, **parts)
        return done.to_json()

    result = run_with_platform(ctx, work)
    if as_json:
        print_json(result)
    elif preview:
        _print_preview(result)
    else:
        _print_result(result)
    if result.get("refused"):
        raise typer.Exit(1)


def _mode(change: dict[str, Any]) -> str:
    if change["mode_now"] == change["mode_then"] or None in (
        change["mode_now"],
        change["mode_then"],
    ):
        return ""
    return f"mode {change['mode_now']} → {change['mode_then']}"


def _describe(change: dict[str, Any]) -> str:
    kind_now, kind_then = change["kind_now"], change["kind_then"]
    what = {
        "remove": f"remove ({kind_now} made since)",
        "recreate": f"recreate ({kind_then})",
        "replace": f"replace ({kind_now} → {kind_then})",
        "modify": "modify",
    }[change["action"]]
    details = []
    if change["content"]:
        details.append("binary content" if change["binary"] else "content")
    if mode := _mode(change):
        details.append(mode)
    if change["target_now"] != change["target_then"] and change["action"] == "modify":
        details.append(f"link {change['target_now']} → {change['target_then']}")
    if not change["restorable"]:
        details.append("NOT restorable (unreadable when kept)")
    return f"{what}{': ' + ', '.join(details) if details else ''}"


def _print_files(files: list[dict[str, Any]], *, diffs: bool) -> None:
    for change in files:
        console.print(f"  {change['path']}: {_describe(change)}", highlight=False, soft_wrap=True)
        if diffs and change["diff"]:
            console.print(change["diff"].rstrip("\n"), highlight=False, markup=False)
            if change["diff_truncated"]:
                console.print("  (diff cut)", highlight=False)


def _print_conflicts(conflicts: list[dict[str, str]], *, stream: Any) -> None:
    for c in conflicts:
        stream.print(f"  {c['path']}: {c['reason']}", highlight=False, soft_wrap=True)


def _print_conversation(part: dict[str, Any] | None, *, done: bool) -> None:
    if part is not None:
        console.print(
            f"conversation: {len(part['rows'])} row(s) from sequence {part['from_seq']} on "
            f"{'' if done else 'would be '}hidden from the model (kept in the timeline as "
            "rewound)",
            highlight=False,
        )


def _print_preview(result: dict[str, Any]) -> None:
    if result["blocked"]:
        console.print(f"[bold yellow]cannot rewind now:[/] {result['blocked']}", highlight=False)
    files = result["files"]
    if files is not None:
        steps = [s["step"] for s in result["steps"]]
        console.print(
            f"files: {len(files)} path(s) would be put back, undoing step(s) "
            f"{', '.join(map(str, steps)) or 'none'}",
            highlight=False,
        )
        _print_files(files, diffs=True)
    if result["conflicts"]:
        console.print(
            "[bold red]conflicts[/] (changed since by something else, or while another "
            "call ran on the same source; the rewind is refused unless --force):",
            highlight=False,
        )
        _print_conflicts(result["conflicts"], stream=console)
    _print_conversation(result["conversation"], done=False)


def _print_result(result: dict[str, Any]) -> None:
    if result["refused"]:
        err_console.print(
            "[bold red]refused:[/] changed since the checkpoint by something else, or "
            "while another call ran on the same source (--force overwrites them):",
            highlight=False,
        )
        _print_conflicts(result["conflicts"], stream=err_console)
        return
    steps = [s["step"] for s in result["steps"]]
    if result["files"] is not None and not steps:
        console.print("files: nothing to put back (no checkpoint from there on)")
    elif result["files"] is not None:
        console.print(
            f"files: rewound to before step {steps[0]}: {len(steps)} step(s) undone, "
            f"{result['restored']} path(s) put back",
            highlight=False,
        )
        for c in result["conflicts"]:
            console.print(f"  overwritten: {c['path']}: {c['reason']}", highlight=False)
        for path in result["unrestored"]:
            console.print(f"  not restorable (unreadable then): {path}", highlight=False)
    _print_conversation(result["conversation"], done=True)


def _list_steps(ctx: typer.Context, conversation: str, user: str | None, as_json: bool) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        steps = await platform.checkpoints(conversation, user=user)
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
