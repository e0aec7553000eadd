"""`corral doctor`: which confinement tiers work on this machine, how to get a stronger one,
and what is wrong with the operator hooks file (as ``/health``'s ``hook_problems``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._global_options import cli_state
from corral.cli._run import console, err_console, print_json

if TYPE_CHECKING:
    from corral.shell.doctor import Diagnosis

__all__ = ["doctor"]


def _print(report: Diagnosis, hook_problems: list[str]) -> None:
    features = report.features
    console.print("[bold]Confinement tiers[/]", highlight=False)
    for check in report.checks:
        mark = "[green]works[/]" if check.works else "[red]unavailable[/]"
        console.print(f"  {check.tier:<11} {mark}  {check.reason}", highlight=False)
    chosen = report.chosen or "none: shell commands are refused"
    console.print(f"  sandbox = {report.mode!r} gives: [bold]{chosen}[/]", highlight=False)
    console.print("[bold]Kernel[/]", highlight=False)
    userns = features.max_user_namespaces
    rows = [
        ("kernel", f"{features.kernel} ({features.arch}), running as "
         + ("root" if features.root else f"uid {os.getuid()}")),
        ("user namespaces", "unknown" if userns is None else f"max {userns}"
         + ("" if features.unprivileged_userns_clone is not False else
            ", unprivileged disabled")
         + (", restricted by AppArmor" if features.apparmor_restricts_userns else "")),
        ("landlock", f"ABI {features.landlock_abi}" if features.landlock_abi else "absent"),
        ("seccomp", ("available" if features.seccomp else "absent")
         + ("" if features.seccomp_table else f", no syscall table for {features.arch}")),
        ("bubblewrap", f"{report.bwrap} ({report.bwrap_version})" if report.bwrap else "absent"),
    ]  # fmt: skip
    if features.lsm:
        rows.append(("LSMs", features.lsm))
    for name, value in rows:
        console.print(f"  {name:<16} {value}", highlight=False)
    console.print("[bold]Operator hooks[/]", highlight=False)
    for problem in hook_problems or ["no problem (hooks.json absent or sound)"]:
        console.print(f"  {problem}", highlight=False, markup=False)
    console.print("[bold]To do[/]", highlight=False)
    advice = [*report.advice, *(f"fix the hooks file: {p}" for p in hook_problems)]
    for line in advice or ["Nothing: the strongest tier works here."]:
        console.print(f"  - {line}", highlight=False, markup=False)


def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report.")] = False,
) -> None:
    """Show the confinement tiers that work here, the kernel features found and the
    problems of the operator hooks file.

    Exit 0 when the configured sandbox mode has a tier to run commands under and the hooks
    file (if any) is sound, 1 otherwise (the platform would refuse to start on it).
    """
    import asyncio

    from corral.errors import CorralError
    from corral.runtime.hooks import hooks_file_problems
    from corral.settings import load_settings
    from corral.shell.doctor import diagnose

    try:
        settings = load_settings(cli_state(ctx).data_dir)
    except CorralError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    report = asyncio.run(diagnose(settings))
    hook_problems = hooks_file_problems(settings)
    if as_json:
        print_json({**report.to_json(), "hook_problems": hook_problems})
    else:
        _print(report, hook_problems)
    if report.chosen is None or hook_problems:
        raise typer.Exit(1)
