"""Running a platform coroutine from a command, with errors shown the same way everywhere.

Commands import this module at start-up, so it imports the platform (and asyncio) only when
a command runs: ``corral --help`` never loads the database layer or the model libraries.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from corral.cli._global_options import cli_state
from corral.errors import CorralError

if TYPE_CHECKING:
    from pathlib import Path

    from corral.platform import Platform
    from corral.settings import Settings

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


@contextmanager
def collector_paused_for_start_up() -> Iterator[Callable[[], None]]:
    """Pause the cyclic garbage collector while a command imports and opens the platform;
    the callable given settles what start-up built (the permanent generation) and resumes.

    Start-up allocates some 300,000 objects that nearly all live as long as the process;
    meanwhile the collector ran about 290 times, two of them over the whole heap: measured
    at 0.3-0.4 s of the 1.1 s CPU of ``corral tools list``. Frozen, they are never walked
    again, and a little cyclic garbage of start-up is never freed, which a command's process
    does not notice. Leaving the block unsettled (the open failed) just resumes."""
    enabled = gc.isenabled()
    settled = False

    def settle() -> None:
        nonlocal settled
        if not settled:
            settled = True
            gc.freeze()
            if enabled:
                gc.enable()

    gc.disable()
    try:
        yield settle
    finally:
        if not settled and enabled:
            gc.enable()


def fail(message: str) -> NoReturn:
    """Report a usage problem and exit with 2 (never wrapped: paths and commands in it are
    copied as they are)."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def warn_of_a_new_database_beside_a_cluster(data_dir: Path | None) -> Settings | None:
    """Warn when this command is about to create a SQLite database in a data folder a
    cluster claimed: the shell most likely lacks the cluster's CORRAL_DATABASE_URL.

    Returns the settings read, for the open (None when they are wrong: the open says why)."""
    from corral.runtime.cluster_home import cluster_marked
    from corral.settings import load_settings

    try:
        settings = load_settings(data_dir)
    except CorralError:
        return None  # opening the platform reports it
    database = settings.database_path
    cluster = cluster_marked(settings.private_dir)
    if database is None or database.exists() or cluster is None:
        return settings
    err_console.print(
        f"[bold yellow]warning:[/] creating a new SQLite database {database}, but this data "
        f"folder belongs to the cluster on {cluster}: set CORRAL_DATABASE_URL (or "
        "database_url in corral.toml) to work on the cluster",
        highlight=False,
        soft_wrap=True,
    )
    return settings


def run_with_platform(ctx: typer.Context, work: Callable[[Platform], Awaitable[T]]) -> T:
    """Open the platform the global options chose, run ``work`` as the local owner, close it.

    Errors exit with 2.
    """
    import asyncio

    from corral.cli._open import open_waiting_for_a_slot

    data_dir = cli_state(ctx).data_dir
    with collector_paused_for_start_up() as settle:
        settings = warn_of_a_new_database_beside_a_cluster(data_dir)

        async def main() -> T:
            platform = await open_waiting_for_a_slot(data_dir, settings)
            settle()
            try:
                return await work(platform)
            finally:
                await platform.close()

        try:
            return asyncio.run(main())
        except CorralError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
            raise typer.Exit(2) from None
