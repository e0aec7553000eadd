"""How many PostgreSQL connections one Corral process may open, from its settings.

Every ``corral serve`` and ``corral worker`` on a cluster's database holds up to three
pools: the engine's (SQLAlchemy: sessions and the hot-append writer), the job queue's
(procrastinate: fetches, heartbeats, finishes, defers; sized from ``worker_concurrency``)
and one LISTEN connection for live events. The sum over every process must stay below the
server's ``max_connections``: ``corral doctor`` prints both.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.settings import Settings

__all__ = ["ENGINE_POOL_OVERFLOW", "ENGINE_POOL_SIZE", "ConnectionBudget", "connection_budget"]

ENGINE_POOL_SIZE = 5
ENGINE_POOL_OVERFLOW = 10
JOB_POOL_SPARE = 8
"""Job-queue connections beyond one per concurrent run: heartbeats, the sweep and defers
must never wait behind finishing jobs, or live workers look dead."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionBudget:
    engine: int
    jobs: int
    events: int = 1

    @property
    def per_process(self) -> int:
        return self.engine + self.jobs + self.events

    def processes_within(self, max_connections: int, reserved: int = 3) -> int:
        """How many serve/worker processes fit under ``max_connections`` (the server keeps
        ``reserved`` for superusers)."""
        return max(0, (max_connections - reserved) // self.per_process)


def connection_budget(settings: Settings) -> ConnectionBudget:
    return ConnectionBudget(
        engine=ENGINE_POOL_SIZE + ENGINE_POOL_OVERFLOW,
        jobs=settings.worker_concurrency + JOB_POOL_SPARE,
    )
