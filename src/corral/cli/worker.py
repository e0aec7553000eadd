"""`corral worker`: advance runs on a cluster (procrastinate over PostgreSQL)."""

from __future__ import annotations

from typing import Annotated

import typer

from corral.cli._global_options import cli_state
from corral.cli._run import console, fail, settle_heap

__all__ = ["worker"]


def worker(
    ctx: typer.Context,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Runs advanced at once (default: worker_concurrency)."),
    ] = None,
) -> None:
    """Advance runs queued by `corral serve` (and by other workers) until SIGINT / SIGTERM.

    Needs a PostgreSQL database_url; every worker must see the same data folder (the
    project drive) at the same path."""
    import asyncio
    import logging

    from corral.cli._open import open_waiting_for_a_slot
    from corral.errors import CorralError
    from corral.settings import load_settings

    data_dir = cli_state(ctx).data_dir
    settings = load_settings(data_dir)
    if settings.hosted_run_jobs != "cluster":
        fail(
            "a worker needs a PostgreSQL database_url (postgresql+asyncpg://…) and run_jobs "
            f"'auto' or 'cluster' (database {settings.effective_database_url.split(':')[0]!r}, "
            f"run_jobs {settings.run_jobs!r}); the embedded default advances runs in-process"
        )

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")

    async def main() -> None:
        platform = await open_waiting_for_a_slot(data_dir, run_jobs="cluster")
        try:
            count = concurrency or platform.settings.worker_concurrency
            settle_heap()
            console.print(
                f"corral worker {platform.runtime.worker} advancing up to {count} runs "
                f"from {platform.settings.data_dir}",
                highlight=False,
            )
            await platform.runtime.work(count)
        finally:
            await platform.close()

    try:
        asyncio.run(main())
    except CorralError as exc:
        fail(str(exc))
