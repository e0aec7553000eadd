"""Scale-out: runs advanced by ``corral worker`` processes on procrastinate over PostgreSQL.

:class:`~corral.runtime.cluster.engine_jobs.ProcrastinateJobs` is the job runner;
:mod:`~corral.runtime.cluster.watch` is what each worker checks several times a second for
the runs it advances (Stop, takeovers). The job function itself stays free of engine code.
"""

from __future__ import annotations

from corral.runtime.cluster.engine_jobs import ClusterTiming, ProcrastinateJobs
from corral.runtime.cluster.watch import watch_live_runs

__all__ = ["ClusterTiming", "ProcrastinateJobs", "watch_live_runs"]
