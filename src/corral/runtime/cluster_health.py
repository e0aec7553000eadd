"""How a cluster stands, for ``/health`` and ``corral doctor``: runs waiting for a worker and
the workers that still send heartbeats.

Read from the database alone (the runs table and procrastinate's workers table), so any
process on the cluster's database can tell, a short CLI command included. A cluster with
queued runs and no live worker is ``degraded``: nothing will advance them until a worker
starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

__all__ = ["ClusterHealth", "cluster_health"]

_QUEUED = text("SELECT count(*), min(created_at) FROM runs WHERE status = 'queued'")
_RUNNING = text("SELECT count(*) FROM runs WHERE status = 'running'")
_WORKERS = text(
    "SELECT count(*) FILTER (WHERE last_heartbeat >= now() - make_interval(secs => :stalled)), "
    "count(*) FROM procrastinate_workers"
)
_AGE = text("SELECT extract(epoch FROM now() - :at)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterHealth:
    queued: int
    """Runs waiting for a worker."""
    oldest_queued_seconds: float | None
    """How long the oldest queued run has waited."""
    running: int
    live_workers: int
    """Workers whose last heartbeat is younger than ``worker_stalled_seconds``."""
    dead_workers: int
    """Workers still listed whose heartbeats stopped (the sweep removes them)."""

    @property
    def status(self) -> str:
        return "degraded" if self.queued and not self.live_workers else "ok"

    @property
    def problem(self) -> str | None:
        if self.status == "ok":
            return None
        waited = self.oldest_queued_seconds or 0.0
        return (
            f"{self.queued} run(s) queued (the oldest for {waited:.0f} s) and no live worker: "
            "start `corral worker` on this database"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "queued": self.queued,
            "oldest_queued_seconds": self.oldest_queued_seconds,
            "running": self.running,
            "live_workers": self.live_workers,
            "dead_workers": self.dead_workers,
            "problem": self.problem,
        }


async def cluster_health(
    sessions: async_sessionmaker[AsyncSession], stalled_seconds: float
) -> ClusterHealth:
    """Count the queue and the workers (PostgreSQL with procrastinate's schema only)."""
    async with sessions() as session:
        queued, oldest = (await session.execute(_QUEUED)).one()
        running = await session.scalar(_RUNNING)
        live, listed = (await session.execute(_WORKERS, {"stalled": stalled_seconds})).one()
        age = None if oldest is None else await session.scalar(_AGE, {"at": oldest})
    return ClusterHealth(
        queued=int(queued or 0),
        oldest_queued_seconds=None if age is None else round(float(age), 1),
        running=int(running or 0),
        live_workers=int(live or 0),
        dead_workers=int(listed or 0) - int(live or 0),
    )
