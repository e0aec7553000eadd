"""`corral check-command`: would execute run this command, and would it ask? Nothing runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._run import console, err_console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.platform.rules import CommandCheck
    from corral.shell.command_rules import RulesJudgement

__all__ = ["REFUSED_EXIT", "check_command", "print_rules"]

REFUSED_EXIT = 3

_SAYS = {
    "allow": "runs without asking",
    "prompt": "asks a person",
    "forbidden": "refused",
    "unmatched": "as the profile says (no rule covers every command)",
}


def print_rules(judgement: RulesJudgement) -> None:
    """One line per command the analysis found: its decision and the rule that made it."""
    for found in judgement.commands:
        shown = " ".join(w if w is not None else "…" for w in found.words)
        rule = found.rule
        by = f"{rule.show()!r} ({rule.origin.describe()})" if rule is not None else "no rule"
        note = f"; {found.note}" if found.note else ""
        why = f": {rule.justification}" if rule is not None and rule.justification else ""
        console.print(
            f"  {found.decision or '-':9} {shown}  [{by}{why}{note}]",
            highlight=False,
            markup=False,
        )
    console.print(f"rules: {_SAYS[judgement.decision]}", highlight=False)


def check_command(
    ctx: typer.Context,
    command: Annotated[str, typer.Argument(help="The bash command, quoted as one argument.")],
    cwd: Annotated[
        str | None, typer.Option(help="Working directory: data://…, absolute or relative.")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Judge for this user (default: owner).")] = None,
    agent: Annotated[str, typer.Option(help="Rules for calls through this agent.")] = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable verdict.")] = False,
) -> None:
    """Judge COMMAND with command analysis, the URI-policy gate and the permission rules
    (the decision per command, with the rule). Exit 0 allowed, 3 refused."""

    async def work(platform: Platform) -> CommandCheck:
        caller = await platform.caller(user)
        return await platform.rules.check(command, cwd=cwd, caller=caller, agent=agent)

    checked = run_with_platform(ctx, work)
    verdict = checked.verdict
    forbidden = checked.rules is not None and checked.rules.decision == "forbidden"
    if as_json:
        print_json(checked.to_json())
    elif verdict.allowed:
        console.print(
            f"allowed (cwd {verdict.cwd}, {verdict.plane} plane, {verdict.confinement})",
            highlight=False,
        )
        if checked.rules is not None and checked.rules.commands:
            print_rules(checked.rules)
    else:
        where = f" at {verdict.word!r}" if verdict.word else ""
        err_console.print(
            f"refused by {verdict.guard}, rule {verdict.rule}{where}: {verdict.detail}",
            highlight=False,
            markup=False,
        )
    if not verdict.allowed or forbidden:
        raise typer.Exit(REFUSED_EXIT)
