"""`corral hooks`: the operator hooks configured, and a dry run of those an event matches."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, err_console, fail, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.hooks import HookOutcome

__all__ = ["app"]

app = typer.Typer(
    help="Operator hooks (Claude Code's hooks object, from <data_dir>/hooks.json and the "
    "live setting 'hooks'): list them, dry-run them.",
    no_args_is_help=True,
)


def _warn(problems: list[str]) -> None:
    for problem in problems:
        err_console.print(f"[bold yellow]warning:[/] {problem}", highlight=False)


@app.command("list")
def list_hooks(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """The configured hooks in the order they run, with their source."""

    async def work(platform: Platform) -> tuple[list[dict[str, Any]], list[str]]:
        hooks = platform.hooks
        await hooks.refresh()
        rows: list[dict[str, Any]] = [
            {
                "source": group.source,
                "where": handler.where,
                "event": group.event,
                "matcher": group.matcher.text or "*",
                "type": handler.kind,
                "runs": handler.target,
                "timeout_s": handler.timeout_s,
                "on_error": handler.on_error,
            }
            for group in hooks.groups
            for handler in group.handlers
        ]
        drive = str(platform.settings.drive_dir)
        writable = [
            f"{row['where']} ({row['source']}) runs from the drive, which the agent can write: "
            "keep guard scripts in a folder only administrators write (e.g. /etc/corral/hooks)"
            for row in rows
            if row["type"] == "command"
            and ("CLAUDE_PROJECT_DIR" in row["runs"] or drive in row["runs"])
        ]
        return rows, hooks.problems + writable

    rows, problems = run_with_platform(ctx, work)
    if as_json:
        print_json({"hooks": rows, "problems": problems})
        return
    _warn(problems)
    if not rows:
        console.print("No hooks configured (<data_dir>/hooks.json, live setting 'hooks').")
        return
    table = Table("event", "matcher", "type", "runs", "timeout", "on_error", "source")
    for row in rows:
        table.add_row(
            row["event"],
            row["matcher"],
            row["type"],
            row["runs"],
            f"{row['timeout_s']:g} s",
            row["on_error"],
            f"{row['source']} {row['where']}",
        )
    console.print(table)


@app.command("test")
def test_hooks(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(help="Hook event, e.g. PreToolUse.")],
    input_json: Annotated[
        str,
        typer.Option("--input", help='The hook input as a JSON object, e.g. \'{"tool_input": '
                     '{"command": "ls"}}\'.'),
    ] = "{}",
    tool: Annotated[
        str | None, typer.Option("--tool", help="The Corral tool name, for tool events.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:  # fmt: skip
    """Run the hooks EVENT matches, for real, and print their combined decision.

    Exit 0 when the hooks let the event through, 1 when they block it, 2 on a usage error.
    """
    from corral.runtime.hooks import EVENTS

    if event not in EVENTS:
        fail(f"{event!r} is not a hook event; use one of {', '.join(EVENTS)}")
    try:
        payload = json.loads(input_json)
    except json.JSONDecodeError as exc:
        fail(f"--input is not valid JSON: {exc}")
    if not isinstance(payload, dict):
        fail("--input must be a JSON object (the fields a hook receives on stdin)")
    named = payload.get("tool_name")
    chosen = tool or (named if isinstance(named, str) else None)

    async def work(platform: Platform) -> tuple[HookOutcome, list[str]]:
        outcome = await platform.hooks.run(event, payload, tool=chosen)
        return outcome, platform.hooks.problems

    outcome, problems = run_with_platform(ctx, work)
    if as_json:
        print_json({**asdict(outcome), "problems": problems})
    else:
        _warn(problems)
        _print_outcome(outcome)
    if outcome.blocked:
        raise typer.Exit(1)


def _print_outcome(outcome: HookOutcome) -> None:
    if not outcome.records:
        console.print("No hook matches this event: no opinion.")
        return
    table = Table("hook", "outcome", "ms", "reason or error", "source")
    for record in outcome.records:
        table.add_row(
            record.hook,
            record.outcome + (" (input rewritten)" if record.updated_input else ""),
            f"{record.duration_ms:g}",
            record.error or record.reason,
            record.source,
        )
    console.print(table)
    console.print(f"decision: [bold]{outcome.decision or 'no opinion'}[/]", highlight=False)
    if outcome.reason:
        console.print(f"reason: {outcome.reason}", highlight=False, markup=False)
    if outcome.updated_input is not None:
        console.print("updated input:", json.dumps(outcome.updated_input), markup=False)
    for context in outcome.additional_context:
        console.print(f"additional context: {context}", highlight=False, markup=False)
    for message in outcome.system_messages:
        console.print(f"system message: {message}", highlight=False, markup=False)
