"""`corral rules`: the permission rules in force (rule files and remembered ones), a dry run
of a command against them, and removal of a remembered rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from corral.cli._run import console, err_console, print_json, run_with_platform
from corral.cli.check_command import REFUSED_EXIT, print_rules

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.platform.rules import CommandCheck
    from corral.policy.command_rules import PrefixRule, ToolRule

__all__ = ["app"]

app = typer.Typer(
    help="Permission rules: <data_dir>/rules/*.rules (Codex's prefix_rule syntax) and "
    "*.toml, and rules remembered from approvals.",
    no_args_is_help=True,
)


def _warn(problems: list[str]) -> None:
    for problem in problems:
        err_console.print(f"warning: {problem}", highlight=False, markup=False)


@app.command("list")
def list_rules(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option(help="As this user (default: owner).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every rule with its id, decision and where it came from."""

    async def work(platform: Platform) -> tuple[list[PrefixRule | ToolRule], list[str]]:
        caller = await platform.caller(user)
        return await platform.rules.listing(caller), platform.rules.problems()

    rules, problems = run_with_platform(ctx, work)
    if as_json:
        print_json({"rules": [r.to_json() for r in rules], "problems": problems})
        return
    _warn(problems)
    if not rules:
        console.print("no permission rules")
        return
    table = Table("id", "rule", "decision", "from", "justification")
    for rule in rules:
        shown = rule.to_json()
        table.add_row(rule.id, rule.show(), rule.decision, shown["origin"], rule.justification)
    console.print(table)


@app.command("test")
def test_rules(
    ctx: typer.Context,
    command: Annotated[str, typer.Argument(help="The bash command, quoted as one argument.")],
    user: Annotated[str | None, typer.Option(help="As this user (default: owner).")] = None,
    agent: Annotated[str, typer.Option(help="For calls through this agent.")] = "default",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The rules' decision on each command COMMAND runs, and the rule that made it."""

    async def work(platform: Platform) -> CommandCheck:
        caller = await platform.caller(user)
        return await platform.rules.check(command, caller=caller, agent=agent)

    checked = run_with_platform(ctx, work)
    if as_json:
        print_json(checked.to_json())
    elif checked.rules is None:
        err_console.print(
            f"refused before any rule: {checked.verdict.detail}", highlight=False, markup=False
        )
    else:
        print_rules(checked.rules)
    if not checked.verdict.allowed or (
        checked.rules is not None and checked.rules.decision == "forbidden"
    ):
        raise typer.Exit(REFUSED_EXIT)


@app.command("remove")
def remove_rule(
    ctx: typer.Context,
    rule_id: Annotated[str, typer.Argument(help="The remembered rule's id (rules list).")],
    user: Annotated[str | None, typer.Option(help="As this user (default: owner).")] = None,
) -> None:
    """Remove a remembered rule (a rule file's rule is removed by editing its file)."""

    async def work(platform: Platform) -> None:
        await platform.rules.remove(rule_id, await platform.caller(user))

    run_with_platform(ctx, work)
    console.print(f"removed {rule_id}", highlight=False)
