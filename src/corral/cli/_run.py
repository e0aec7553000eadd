"""Running a platform coroutine from a command, with errors shown the same way everywhere.

Commands import this module at start-up, so it imports the platform (and asyncio) only when
a command runs: ``corral --help`` never loads the database layer or the model libraries.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from corral.cli._global_options import cli_state
from corral.errors import CorralError

if TYPE_CHECKING:
    from pathlib import Path

    from corral.platform import Platform

__all__ = ["console", "err_console", "fail", "print_json", "run_with_platform", "settle_heap"]

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)


def settle_heap() -> None:
    """Set what start-up built aside from the garbage collector, for a process that runs
    for long (serve, worker): a full collection walked all of it (~280,000 objects, 0.2-1 s
    on this machine), stalling every request in flight."""
    gc.collect()
    gc.freeze()


def fail(message: str) -> NoReturn:
    """Report a usage problem and exit with 2 (never wrapped: paths and commands in it are
    copied as they are)."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def warn_of_a_new_database_beside_a_cluster(data_dir: Path | None) -> None:
    """Warn when this command is about to create a SQLite database in a data folder a
    cluster claimed: the shell most likely lacks the cluster's CORRAL_DATABASE_URL."""
    from corral.runtime.cluster_home import cluster_marked
    from corral.settings import load_settings

    try:
        settings = load_settings(data_dir)
    except CorralError:
        return  # opening the platform reports it
    database = settings.database_path
    cluster = cluster_marked(settings.private_dir)
    if database is None or database.exists() or cluster is None:
        return
    err_console.print(
        f"[bold yellow]warning:[/] creating a new SQLite database {database}, but this data "
        f"folder belongs to the cluster on {cluster}: set CORRAL_DATABASE_URL (or "
        "database_url in corral.toml) to work on the cluster",
        highlight=False,
        soft_wrap=True,
    )


def run_with_platform(ctx: typer.Context, work: Callable[[Platform], Awaitable[T]]) -> T:
    """Open the platform the global options chose, run ``work`` as the local owner, close it.

    Errors exit with 2.
    """
    import asyncio

    from corral.cli._open import open_waiting_for_a_slot

    data_dir = cli_state(ctx).data_dir
    warn_of_a_new_database_beside_a_cluster(data_dir)

    async def main() -> T:
        platform = await open_waiting_for_a_slot(data_dir)
        try:
            return await work(platform)
        finally:
            await platform.close()

    try:
        return asyncio.run(main())
    except CorralError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
