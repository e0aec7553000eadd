"""`corral check-command`: would execute run this command? Nothing runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._run import console, err_console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.shell.verdict import Verdict

__all__ = ["REFUSED_EXIT", "check_command"]

REFUSED_EXIT = 3


def check_command(
    ctx: typer.Context,
    command: Annotated[str, typer.Argument(help="The bash command, quoted as one argument.")],
    cwd: Annotated[
        str | None, typer.Option(help="Working directory: data://…, absolute or relative.")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Judge for this user (default: owner).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable verdict.")] = False,
) -> None:
    """Judge COMMAND with command analysis and the URI-policy gate. Exit 0 allowed, 3 refused."""

    async def work(platform: Platform) -> Verdict:
        return await platform.check_command(command, cwd=cwd, user=user)

    verdict = run_with_platform(ctx, work)
    if as_json:
        print_json(verdict.to_json())
    elif verdict.allowed:
        console.print(
            f"allowed (cwd {verdict.cwd}, {verdict.plane} plane, {verdict.confinement})",
            highlight=False,
        )
    else:
        where = f" at {verdict.word!r}" if verdict.word else ""
        err_console.print(
            f"refused by {verdict.guard}, rule {verdict.rule}{where}: {verdict.detail}",
            highlight=False,
            markup=False,
        )
    if not verdict.allowed:
        raise typer.Exit(REFUSED_EXIT)
