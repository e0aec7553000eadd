"""What a worker checks several times a second for the runs it advances.

Stop may be asked in any process: it sets the run's stop flag in the store, and the worker
advancing the run cancels it here, which ends its tool calls and their process groups on
this machine. A run whose ``worker`` field names another worker was taken over (this
worker was thought dead): it lets go without writing anything more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from corral.runtime.takeover import TAKEN_OVER
from corral.store import runtime_tables as rt_tables

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["watch_live_runs"]


async def watch_live_runs(rt: RunHost) -> None:
    """Cancel the runs of this process that were stopped or taken over elsewhere."""
    live = dict(rt.live)
    if not live:
        return
    r = rt_tables.Run
    async with rt.kernel.sessions() as session:
        found = list(
            await session.execute(
                select(r.id, r.status, r.worker, r.stop_requested).where(r.id.in_(list(live)))
            )
        )
    for run_id, status, worker, stop_requested in found:
        cancellation = live[run_id]
        if cancellation.cancelled:
            continue
        if stop_requested:
            cancellation.cancel("stopped")
        elif status == "running" and worker != rt.worker:
            cancellation.cancel(TAKEN_OVER)
