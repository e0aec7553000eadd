"""Opening the platform for a command, `corral serve` or `corral worker`: a PostgreSQL server
with no connection left (its other clients hold every slot, as a loaded cluster's workers
may) is waited for, up to ``database_full_wait_seconds``, rather than refused at once."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.settings import Settings

__all__ = ["open_waiting_for_a_slot"]

_FIRST_PAUSE, _LONGEST_PAUSE = 0.2, 2.0
_err_console = Console(stderr=True)


async def open_waiting_for_a_slot(
    data_dir: str | os.PathLike[str] | None, settings: Settings | None = None, **overrides: Any
) -> Platform:
    """``open_platform(data_dir, settings=settings, **overrides)``, tried again while the
    server is full; past the wait, its :class:`DatabaseFull` error (saying what to do)."""
    from corral.platform import open_platform
    from corral.settings import load_settings
    from corral.store.engine import DatabaseFull

    loop = asyncio.get_running_loop()
    deadline: float | None = None
    pause = _FIRST_PAUSE
    while True:
        try:
            return await open_platform(data_dir, settings=settings, **overrides)
        except DatabaseFull:
            if deadline is None:
                if settings is None:
                    settings = load_settings(data_dir, **overrides)
                wait = settings.database_full_wait_seconds
                deadline = loop.time() + wait
                if wait > 0:
                    _err_console.print(
                        "the database server has no connection left; waiting up to "
                        f"{wait:g} s (database_full_wait_seconds) for one to free",
                        highlight=False,
                    )
            if loop.time() + pause > deadline:
                raise
            await asyncio.sleep(pause)  # a backoff: nothing tells when another client lets go
            pause = min(pause * 2, _LONGEST_PAUSE)
