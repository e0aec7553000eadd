"""The Runtime: conversations, runs and their jobs, reports and the inbox — the Python API.

The composition root builds it on the kernel (``platform.runtime``). It is a
:class:`~corral.runtime.host.RunHost` (the state the loop's modules share) plus the API; the
loop itself lives in :mod:`corral.runtime.loop`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from corral.errors import NotFound, UsageError
from corral.kernel import ApprovalRecord, Decision, Kernel
from corral.policy.identity import Caller
from corral.runtime import chat as chat_module
from corral.runtime import inbox, parking, recovery, turns
from corral.runtime.background import BackgroundWorkSource
from corral.runtime.budgets import parse_budget
from corral.runtime.cluster_health import ClusterHealth, cluster_health
from corral.runtime.cluster_home import claim_data_folder
from corral.runtime.conversations import ConversationInfo
from corral.runtime.deliveries import DeliveryRecord
from corral.runtime.endings import Outcome, end_run
from corral.runtime.host import RunHost
from corral.runtime.jobs import JobRunner, LocalJobs
from corral.runtime.reports import Reports
from corral.runtime.results import RunResult
from corral.runtime.runs import TERMINAL, RunRecord
from corral.runtime.timeline import TimelineRow
from corral.store.connection_budget import connection_budget
from corral.tools.results import ToolResult

__all__ = ["STOP_WAIT_SECONDS", "Runtime"]

log = logging.getLogger("corral.runtime")

STOP_WAIT_SECONDS = 5.0
"""How long Stop waits for a run on another worker to end before it answers anyway."""


class Runtime(RunHost):
    def __init__(self, kernel: Kernel) -> None:
        super().__init__(kernel)
        self.jobs = self._job_runner()
        self.reports = Reports(self)
        self.on_host: list[Callable[[], Awaitable[None]]] = []
        """Started by :meth:`host`: what only a long-lived process runs (the scheduler)."""
        self.on_tick: list[Callable[[], Awaitable[object]]] = []
        """What a cluster runs on the engine's periodic task instead of ``on_host`` loops
        (the scheduler's tick): on one worker at a time, every ``cluster_sweep_seconds``."""

    def _job_runner(self) -> JobRunner:
        settings = self.kernel.settings
        if settings.run_jobs != "cluster":
            return LocalJobs(self.advance_run, self.concurrency)
        # Imported here: the embedded default never loads the engine.
        from corral.runtime.cluster import ClusterTiming, ProcrastinateJobs, watch_live_runs

        return ProcrastinateJobs(
            self.advance_run,
            database_url=settings.effective_database_url,
            sessions=self.kernel.sessions,
            timing=ClusterTiming(
                heartbeat_seconds=settings.worker_heartbeat_seconds,
                stalled_seconds=settings.worker_stalled_seconds,
                sweep_seconds=settings.cluster_sweep_seconds,
                pool_size=connection_budget(settings).jobs,
                shutdown_grace_seconds=settings.worker_shutdown_grace_seconds,
            ),
            watch=lambda: watch_live_runs(self),
            tick=self._tick,
        )

    async def _tick(self) -> None:
        for tick in self.on_tick:
            try:
                await tick()
            except Exception:  # one failing tick must not hold back the others
                log.exception("a periodic tick of the cluster failed")

    def _rows_elsewhere(self, conversation_id: str) -> None:
        for observe in self.remote_row_observers:
            observe(conversation_id)

    async def open_jobs(self) -> None:
        """Connect the job runner to its engine and, on PostgreSQL, the live events to the
        other processes (nothing to do in the embedded default)."""
        if self.kernel.engine.dialect.name == "postgresql":
            from corral.runtime.cluster.live_events import EventRelay

            relay = EventRelay(
                self.kernel.settings.effective_database_url,
                self.events,
                self.conversations,
                on_run=lambda run_id, status: self.stored_waits.nudge(run_id),
                on_rows=self._rows_elsewhere,
            )
            await relay.start()
            self.relay = relay
        if self.jobs.distributed:
            from corral.runtime.cluster import ProcrastinateJobs

            settings = self.kernel.settings
            await claim_data_folder(
                self.kernel.sessions,
                settings.data_dir,
                settings.private_dir,
                self.kernel.engine.url.render_as_string(hide_password=True),
            )
            assert isinstance(self.jobs, ProcrastinateJobs)
            await self.jobs.open()

    async def work(self, concurrency: int | None = None) -> None:
        """Be a cluster worker (``corral worker``) until SIGINT or SIGTERM."""
        from corral.runtime.cluster import ProcrastinateJobs

        if not isinstance(self.jobs, ProcrastinateJobs):
            raise UsageError(
                "a worker needs run_jobs = 'cluster' and a PostgreSQL database_url "
                "(postgresql+asyncpg://…); the embedded default advances runs in-process"
            )
        self.cluster_worker = True
        await self.jobs.work(concurrency or self.kernel.settings.worker_concurrency)

    async def cluster_health(self) -> ClusterHealth | None:
        """The cluster's queue and live workers; None off a cluster's database."""
        settings = self.kernel.settings
        if self.kernel.engine.dialect.name != "postgresql" or settings.hosted_run_jobs != "cluster":
            return None
        return await cluster_health(self.kernel.sessions, settings.worker_stalled_seconds)

    def add_background_work(self, source: BackgroundWorkSource) -> None:
        """List ``source``'s running work in the agent's prompt every step."""
        self.background_work.append(source)

    # -- conversations ----------------------------------------------------------------------

    async def list_conversations(self, *, user: str | None = None) -> list[ConversationInfo]:
        caller = await self.kernel.caller(user)
        return await self.conversations.list_conversations(owner_id=caller.user_id)

    async def rows(
        self, conversation_id: str, *, user: str | None = None, after: int = 0
    ) -> list[TimelineRow]:
        await self.conversation(conversation_id, user=user)
        return await self.conversations.rows(conversation_id, after=after)

    # -- turns and runs ---------------------------------------------------------------------

    async def chat(self, message: str, **options: Any) -> RunResult:
        """See :func:`corral.runtime.chat.chat`."""
        return await chat_module.chat(self, message, **options)

    async def start_chat(self, message: str, **options: Any) -> RunRecord:
        """See :func:`corral.runtime.chat.start_chat`: queue the turn, do not wait."""
        return await chat_module.start_chat(self, message, **options)

    async def advance_run(self, run_id: str) -> None:
        """The job function: advance a queued run until it finishes, parks or stops."""
        # Imported here: the loop brings the model stack, which commands that never step a
        # run (``corral tools list``) must not pay for.
        from corral.runtime import loop

        await loop.advance_run(self, run_id)

    async def wake(self, conversation_id: str, *, by: turns.WakeBy = "ask") -> RunRecord | None:
        """Continue ``conversation_id`` with its queued deliveries if it is free (``by``: see
        :func:`corral.runtime.turns.wake`)."""
        return await turns.wake(self, conversation_id, by=by)

    async def host(self) -> list[str]:
        """Become a host: start the schedulers, then continue every waiting conversation.

        A server calls this once at start-up; a short CLI command does not, so it never
        fires a schedule it could not see through. On a cluster the workers' periodic task
        runs ``on_tick`` instead."""
        if not self.jobs.distributed:
            for start in self.on_host:
                await start()
        return await self.wake_all()

    async def wake_all(self) -> list[str]:
        """Continue every free conversation that has deliveries waiting (a host's start)."""
        woken = []
        for conversation_id in await self.deliveries.conversations_with_queued():
            run = await self.wake(conversation_id)
            if run is not None:
                woken.append(run.id)
        return woken

    async def run(self, run_id: str, *, user: str | None = None) -> RunRecord:
        run = await self.runs.get(run_id)
        try:
            await self.conversation(run.conversation_id, user=user)
        except NotFound:
            # Someone else's run reads as no run at all: not its conversation's id.
            raise NotFound(f"no run {run_id!r}") from None
        return run

    async def run_budget(self, run_id: str, *, user: str | None = None) -> dict[str, Any] | None:
        """The run's budget, spent against limit for each limit set; None without one."""
        await self.run(run_id, user=user)
        view = await self.budgets.find(run_id)
        return view.to_json() if view is not None else None

    async def budget_line(self, conversation_id: str, *, user: str | None = None) -> str:
        """For the conversation's header: its latest run's spent/limit for each limit set,
        else the limits its owner set for its runs; empty without a budget."""
        await self.conversation(conversation_id, user=user)
        latest = await self.runs.list_runs(conversation_id=conversation_id, limit=1)
        view = await self.budgets.find(latest[0].id) if latest else None
        if view is not None:
            return view.line()
        limits = await self.budgets.conversation_budget(conversation_id)
        if limits.empty:
            return ""
        named = {k: v for k, v in limits.to_json().items() if k != "per_tool"}
        named |= {f"per_tool.{tool}": n for tool, n in limits.per_tool.items()}
        return "limits " + " · ".join(f"{k} {v:g}" for k, v in named.items())

    async def conversation_budget(
        self, conversation_id: str, *, user: str | None = None
    ) -> dict[str, Any]:
        await self.conversation(conversation_id, user=user)
        return (await self.budgets.conversation_budget(conversation_id)).to_json()

    async def set_conversation_budget(
        self, conversation_id: str, limits: object, *, user: str | None = None
    ) -> dict[str, Any]:
        """Set the budget each later run of the conversation gets at most (the owner only;
        ``{}`` clears it); a UsageError says what is wrong with ``limits``."""
        conversation = await self.conversation(conversation_id, user=user)
        caller = await self.kernel.caller(user)
        if caller.user_id != conversation.owner_id:
            raise UsageError(
                f"only the owner of conversation {conversation_id!r} may set its budget"
            )
        budget = parse_budget(limits)
        await self.budgets.set_conversation_budget(conversation_id, budget, set_by=caller.user_id)
        return budget.to_json()

    async def wait_idle(self, conversation_id: str) -> None:
        """Wait until the conversation has no turn in flight and nothing queued (this process)."""
        while True:
            version = self.board.version
            conversation = await self.conversations.get(conversation_id)
            active = conversation.active_run_id
            if active is None:
                if not await self.deliveries.list_deliveries(conversation_id, status="queued"):
                    # A turn may have claimed the conversation and taken the deliveries in
                    # one transaction between the two reads: look again before trusting it.
                    again = await self.conversations.get(conversation_id)
                    if again.active_run_id is None:
                        return
                    continue
            elif self.board.get(active) == "parked":
                return  # it waits for a person
            elif self.board.get(active) is None and not await self._announcing(active):
                return  # another process has it
            await self.board.wait_change(version)

    async def _announcing(self, run_id: str) -> bool:
        """True for a run of this process stored as queued or running whose status the
        board has not shown yet (it is announced right after the write that made it)."""
        run = await self.runs.find(run_id)
        return run is not None and run.worker == self.worker and run.status in ("queued", "running")

    async def stop(self, run_id: str, *, user: str | None = None) -> RunRecord:
        """Stop a run and everything it started; what it captured is kept."""
        run = await self.run(run_id, user=user)
        if run.status in TERMINAL:
            return run
        await self.runs.request_stop(run_id)
        cancellation = self.live.get(run_id)
        if cancellation is not None:
            cancellation.cancel("stopped")
            if self.board.get(run_id) == "running":
                return await self.wait_run(run_id)
        who = (await self.kernel.caller(user)).name
        outcome = Outcome(status="stopped", reason="stopped", detail=f"stopped by {who}")
        if await end_run(self, run, outcome, from_statuses=["parked", "queued"]):
            return await self.runs.get(run_id)
        current = await self.runs.get(run_id)
        if current.status == "running" and current.worker == self.worker:
            # It started between our read and the stop. It registered its cancellation
            # before it counted as running, so it is there now: a loop already inside a
            # tool call would not look at the stored flag until the call returned.
            started = self.live.get(run_id)
            if started is not None:
                started.cancel("stopped")
            return await self.wait_run(run_id)
        if current.status == "running" and self.jobs.distributed:
            # Its worker sees the flag within a second; a dead one's successor at once.
            try:
                return await asyncio.wait_for(self.wait_run(run_id), STOP_WAIT_SECONDS)
            except TimeoutError:
                return await self.runs.get(run_id)
        return current

    # -- answers ----------------------------------------------------------------------------

    async def resolve_wait(
        self,
        run_id: str,
        call_id: str,
        result: ToolResult,
        *,
        card: dict[str, object] | None = None,
    ) -> bool:
        """Give a waiting call its result; True when the run resumed (see parking)."""
        return await parking.resolve_wait(self, run_id, call_id, result, card=card)

    async def decide_approval(
        self,
        record: ApprovalRecord,
        decision: Decision,
        decider: Caller,
        note: str | None,
        *,
        surface: str,
    ) -> ToolResult | None:
        """The platform's approval hook: a run's approval resumes that run (its job runs
        an approved call); None when no run owns it."""
        return await parking.decide_approval(self, record, decision, decider, note, surface)

    # -- inbox ------------------------------------------------------------------------------

    async def send_message(
        self,
        conversation_id: str,
        text: str,
        *,
        user: str | None = None,
        caller: Caller | None = None,
        from_conversation_id: str | None = None,
        from_run_id: str | None = None,
    ) -> DeliveryRecord:
        """Queue an inbox message; the conversation continues as the sender's user
        (``caller``, resolved by the entry point, or else ``user``)."""
        sender = caller if caller is not None else await self.kernel.caller(user)
        return await inbox.send_message(
            self,
            conversation_id,
            text,
            sender=sender,
            from_conversation_id=from_conversation_id,
            from_run_id=from_run_id,
        )

    # -- life cycle -------------------------------------------------------------------------

    async def recover(self) -> list[str]:
        return await recovery.recover(self)

    async def end_runs(self) -> None:
        """End the runs this process advances as partial (shutdown), transcripts kept, and
        take no more jobs; their last rows are stored when this returns."""
        self.closing = True
        for cancellation in list(self.live.values()):
            cancellation.cancel("shutdown")
        if not self._jobs_closed:
            self._jobs_closed = True
            await self.jobs.close()

    async def close(self) -> None:
        """End the runs (:meth:`end_runs`), then the event relay."""
        await self.end_runs()
        if self.relay is not None:  # after the jobs: their last events go out too
            await self.relay.close()
            self.relay = None
