"""`corral doctor`: which confinement tiers work on this machine, how to get a stronger one,
and what is wrong with the operator hooks file (as ``/health``'s ``hook_problems``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._global_options import cli_state
from corral.cli._run import console, err_console, print_json

if TYPE_CHECKING:
    from corral.settings import Settings
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


async def _cluster_report(settings: Settings) -> dict[str, Any]:
    """The cluster's queue, workers and PostgreSQL connection budget (a CorralError when
    the database cannot be reached)."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from corral.runtime.cluster_health import cluster_health
    from corral.store import check_reachable, make_engine, make_sessionmaker
    from corral.store.connection_budget import connection_budget

    budget = connection_budget(settings)
    engine = make_engine(settings.effective_database_url)
    try:
        await check_reachable(engine)
        sessions = make_sessionmaker(engine)
        async with sessions() as session:
            allowed = int(await session.scalar(text("SHOW max_connections")) or 0)
            in_use = int(await session.scalar(text("SELECT count(*) FROM pg_stat_activity")) or 0)
        try:
            health: dict[str, Any] | None = (
                await cluster_health(sessions, settings.worker_stalled_seconds)
            ).to_json()
        except DBAPIError:  # no tables yet: nothing has opened this database
            health = None
    finally:
        await engine.dispose()
    return {
        "database": engine.url.render_as_string(hide_password=True),
        "health": health,
        "connections": {
            "per_process": budget.per_process,
            "engine": budget.engine,
            "job_queue": budget.jobs,
            "live_events": budget.events,
            "max_connections": allowed,
            "in_use": in_use,
            "processes_within": budget.processes_within(allowed),
        },
    }


def _print_cluster(report: dict[str, Any]) -> None:
    console.print("[bold]Cluster[/]", highlight=False)
    console.print(f"  database    {report['database']}", highlight=False, markup=False)
    health = report["health"]
    if health is None:
        console.print("  queue       no tables yet (start `corral serve` once)", highlight=False)
    else:
        oldest = health["oldest_queued_seconds"]
        waited = f" (oldest {oldest:.0f} s)" if oldest is not None else ""
        console.print(
            f"  queue       {health['queued']} queued{waited}, {health['running']} running",
            highlight=False,
        )
        console.print(
            f"  workers     {health['live_workers']} live, {health['dead_workers']} dead",
            highlight=False,
        )
    c = report["connections"]
    console.print(
        f"  connections each serve or worker opens up to {c['per_process']} (engine "
        f"{c['engine']}, job queue {c['job_queue']} = worker_concurrency + 8, live events "
        f"{c['live_events']}); max_connections {c['max_connections']} ({c['in_use']} in use) "
        f"fits {c['processes_within']} such processes",
        highlight=False,
    )
    if health is not None and health["problem"]:
        console.print(f"  [red]problem[/]     {health['problem']}", highlight=False)


def doctor(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report.")] = False,
) -> None:
    """Show the confinement tiers that work here, the kernel features found and the
    problems of the operator hooks file; on a cluster's database also its queue, live
    workers and PostgreSQL connection budget.

    Exit 0 when the configured sandbox mode has a tier to run commands under and the hooks
    file (if any) is sound, 1 otherwise (the platform would refuse to start on it), and 1
    when the cluster's database cannot be reached or runs wait with no live worker.
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
    cluster: dict[str, Any] | None = None
    if settings.hosted_run_jobs == "cluster":
        try:
            cluster = asyncio.run(_cluster_report(settings))
        except CorralError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
            raise typer.Exit(1) from None
    if as_json:
        extra = {"cluster": cluster} if cluster else {}
        print_json({**report.to_json(), "hook_problems": hook_problems, **extra})
    else:
        _print(report, hook_problems)
        if cluster is not None:
            _print_cluster(cluster)
    degraded = cluster is not None and (cluster["health"] or {}).get("status") == "degraded"
    if report.chosen is None or hook_problems or degraded:
        raise typer.Exit(1)
