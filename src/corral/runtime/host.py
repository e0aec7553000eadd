"""What the runtime's modules share: the kernel, the stores, events, models, the prompt.

The loop, turns, parking, endings, reports and the context services are functions and
classes that take a :class:`RunHost`; :class:`corral.runtime.runtime.Runtime` is a RunHost
that adds the Python API on top. No module here imports the Runtime, so the modules form no
import circle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from corral.errors import UsageError
from corral.kernel import DEFAULT_AGENT, Kernel
from corral.policy.identity import Caller
from corral.policy.profiles import parse_profile
from corral.runtime.agents import AgentConfig, load_agent
from corral.runtime.appends import Appender, Fence
from corral.runtime.background import BackgroundWorkSource
from corral.runtime.budgets import BudgetedRuns, BudgetStore
from corral.runtime.caller_scope import ScopeHandoff
from corral.runtime.conversations import ConversationInfo, ConversationStore
from corral.runtime.deliveries import DeliveryStore
from corral.runtime.events import EventBus, StatusBoard
from corral.runtime.hooks import Hooks
from corral.runtime.jobs import JobRunner
from corral.runtime.models import ModelRegistry, ResolvedModel
from corral.runtime.prompt import PromptBuilder
from corral.runtime.results import RunResult
from corral.runtime.run_reads import SqliteRunStore
from corral.runtime.runs import ACTIVE, TERMINAL, RunRecord, RunStore
from corral.runtime.skills.allowed_tools import run_narrowing
from corral.runtime.stored_waits import StoredWaits
from corral.runtime.timeline import NewRow, TimelineRow
from corral.runtime.usage import UsageLog
from corral.runtime.workers import worker_id
from corral.store.writer import SqliteWriter
from corral.tools.context import Cancellation, OutputSink
from corral.tools.dispatch import CallRequest
from corral.tools.registry import LoadedTool
from corral.tools.services import Services

if TYPE_CHECKING:
    from corral.runtime.cluster.live_events import EventRelay

__all__ = [
    "SETTLED",
    "LoopTimers",
    "RowObserver",
    "RunEndHook",
    "RunHost",
    "Timers",
    "WakeGate",
]

RunEndHook = Callable[[RunRecord, str], Awaitable[None]]
"""Called when a run ends (with its final status): close what it left open."""

RowObserver = Callable[[str, Sequence[TimelineRow]], None]
"""Sees the rows of a conversation as this process stores them."""

WakeGate = Callable[[str, str], Awaitable[bool]]
"""Asked with (conversation id, user id) before queued deliveries continue a conversation as
that user: True when an open client of that user (a browser) was offered the continuation;
the gate then calls ``turns.wake`` again with ``by="browser"`` or, unclaimed, ``"server"``."""

SETTLED: frozenset[str] = TERMINAL | {"parked"}


class Timers(Protocol):
    def call_later(self, delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        """Run ``callback`` after ``delay`` seconds; the handle cancels it."""
        ...


class LoopTimers:
    """Timers on the running event loop's clock."""

    def call_later(self, delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(delay, callback)


class RunHost:
    """The runtime's shared state and plumbing; see the module docstring."""

    jobs: JobRunner
    """The job runner advancing this process's runs (set by the Runtime)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        sessions = kernel.sessions
        sqlite_writer = kernel.writer if isinstance(kernel.writer, SqliteWriter) else None
        self.conversations = ConversationStore(sessions, kernel.reader, sqlite_writer)
        self.appender = Appender(kernel.engine, kernel.writer)
        self.runs: RunStore = (
            RunStore(sessions)
            if kernel.reader is None or sqlite_writer is None
            else SqliteRunStore(sessions, reader=kernel.reader, writer=sqlite_writer)
        )
        self.deliveries = DeliveryStore(sessions)
        self.budgets = BudgetStore(sessions, kernel.reader)
        self.budgeted = BudgetedRuns()
        """The runs of this process that have a budget (the budget stage counts their calls)."""
        self.events = EventBus()
        self.board = StatusBoard()
        self.relay: EventRelay | None = None
        """On PostgreSQL: carries row and run events to and from the other processes."""
        self.models = ModelRegistry(kernel.settings)
        self.prompt = PromptBuilder(self.conversations)
        self.usage = UsageLog(kernel.logs, self.budgets)
        self._services_for: tuple[ResolvedModel, Services, UsageLog, Services] | None = None
        self.worker = worker_id()
        self.cluster_worker = False
        """True in a ``corral worker`` process, which advances runs and leaves talking to
        people (channel chats) to the serving processes."""
        self.stored_waits = StoredWaits(sessions, SETTLED)
        """Waits for runs other processes advance (a cluster's), read from the store."""
        self.live: dict[str, Cancellation] = {}
        """Cancellations of the runs (and approved calls) executing in this process."""
        self.leases: dict[str, int] = {}
        """The lease of each run this process advances (its rows are fenced on a cluster)."""
        self.run_end_hooks: list[RunEndHook] = []
        self.hooks: Hooks | None = None
        """The operator hooks (set by the composition root): a prompt's UserPromptSubmit."""
        self.scopes = ScopeHandoff()
        """Turns' caller scopes, for their runs starting in this process."""
        self.row_observers: list[RowObserver] = []
        """Called with every batch of rows this process stores (keep them quick)."""
        self.remote_row_observers: list[Callable[[str], None]] = []
        """Called with a conversation another process stored rows in (PostgreSQL only)."""
        self.background_work: list[BackgroundWorkSource] = []
        """Sources of running background work, listed in the agent's prompt every step."""
        self.wake_gate: WakeGate | None = None
        """Registered by a server whose browsers may claim report continuations."""
        self.closing = False
        self._jobs_closed = False
        self.timers: Timers = LoopTimers()
        """When the wall-clock limits fire: a seam tests replace to make minutes short."""

    # -- announcing ------------------------------------------------------------------------

    def publish_rows(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """Announce rows this process stored: to the prompt cache, the appender, readers."""
        self.appender.note(conversation_id, rows)
        self.prompt.observe(conversation_id, rows)
        for observe in self.row_observers:
            observe(conversation_id, rows)
        if self.relay is not None:
            self.relay.local_rows(conversation_id, rows)
        elif self.events.has_subscribers(conversation_id):
            for row in rows:
                self.events.publish(conversation_id, {"type": "row", "row": row.to_json()})

    def publish_run(
        self, conversation_id: str, run_id: str, status: str, reason: str | None, detail: str
    ) -> None:
        event = {
            "type": "run",
            "run_id": run_id,
            "status": status,
            "reason": reason,
            "detail": detail,
        }
        if self.relay is not None:
            self.relay.local_event(conversation_id, event)
        else:
            self.events.publish(conversation_id, event)

    def output_sink(self, run: RunRecord, call_id: str) -> OutputSink:
        def sink(stream: str, text: str) -> None:
            self.events.publish(
                run.conversation_id,
                {
                    "type": "output",
                    "run_id": run.id,
                    "call_id": call_id,
                    "stream": stream,
                    "text": text,
                },
            )

        return sink

    async def append(self, conversation_id: str, rows: Sequence[NewRow]) -> list[TimelineRow]:
        """Append rows (one INSERT when this process wrote the last ones) and announce them."""
        stored = await self.appender.append(conversation_id, rows, self._fence(rows))
        self.publish_rows(conversation_id, stored)
        return stored

    def _fence(self, rows: Sequence[NewRow]) -> Fence | None:
        """The lease a cluster worker's rows of a run it advances are stored under."""
        run_id = rows[0].run_id if rows else None
        if run_id is None or not self.jobs.distributed:
            return None
        lease = self.leases.get(run_id)
        return Fence(run_id, lease) if lease is not None else None

    # -- what a run's calls get --------------------------------------------------------------

    def services_for(self, model: ResolvedModel) -> Services:
        """What handlers of a run's calls get as ``ctx.services``: the installed services,
        the conversation's model and the usage recorder (kept while all three are the same
        objects: every step asks, and services are replaced, never changed in place)."""
        base, kept = self.kernel.services, self._services_for
        if kept is not None and kept[0] is model and kept[1] is base and kept[2] is self.usage:
            return kept[3]
        services = Services(conversation_model=model, usage=self.usage).over(base)
        self._services_for = (model, base, self.usage, services)
        return services

    def pick_model(
        self, requested: str | None, conversation: ConversationInfo, agent: AgentConfig
    ) -> str:
        model = requested or conversation.model or agent.model or self.kernel.settings.default_model
        if not model:
            raise UsageError(
                f"no model for agent {agent.name!r}: pass --model provider:model, set the "
                "agent's model, or set default_model in corral.toml / CORRAL_DEFAULT_MODEL"
            )
        return model

    async def visible_tools(self, run: RunRecord, caller: Caller) -> list[LoadedTool]:
        request = CallRequest(
            tool="",
            arguments={},
            caller=caller,
            agent=run.agent,
            narrowing=run_narrowing(self.kernel.services, run),
        )
        state = await self.kernel.config.dispatch_state()
        return self.kernel.dispatcher.visible_tools(request, state)

    async def concurrency(self) -> int:
        return int((await self.kernel.live_settings())["runs_max_concurrent"])

    # -- conversations and runs --------------------------------------------------------------

    async def start_conversation(
        self,
        *,
        agent: str | None = None,
        user: str | None = None,
        caller: Caller | None = None,
        model: str | None = None,
        profile: str | None = None,
        title: str = "",
    ) -> ConversationInfo:
        """A new, empty conversation with ``agent`` (default: the default agent) of
        ``caller`` (resolved by the entry point) or else of ``user``."""
        caller = caller if caller is not None else await self.kernel.caller(user)
        config = await load_agent(self.kernel.sessions, agent or DEFAULT_AGENT)
        return await self.create_conversation(
            caller, config, model=model, profile=profile, title=title
        )

    async def create_conversation(
        self,
        caller: Caller,
        config: AgentConfig,
        *,
        model: str | None = None,
        profile: str | None = None,
        title: str = "",
    ) -> ConversationInfo:
        """A new, empty conversation of ``caller`` with the agent ``config`` (both already
        resolved by the entry point)."""
        return await self.conversations.create(
            owner_id=caller.user_id,
            agent=config.name,
            model=model,
            profile=parse_profile(profile) if profile else config.profile,
            title=title,
        )

    async def conversation(
        self, conversation_id: str, *, user: str | None = None
    ) -> ConversationInfo:
        """The conversation, if ``user`` (None: the local owner) may read it."""
        conversation = await self.conversations.get(conversation_id)
        conversation.check_access(await self.kernel.caller(user))
        return conversation

    async def result(self, run_id: str) -> RunResult:
        return await self.result_of(await self.runs.get(run_id))

    async def result_of(self, run: RunRecord) -> RunResult:
        """The result of ``run`` as just read (a settled run, say), with the rows it added."""
        rows = await self.conversations.rows_in_bulk(run.conversation_id, run_id=run.id)
        return RunResult.of(run, rows)

    async def wait_run(self, run_id: str) -> RunRecord:
        """Wait until a run finishes, parks or stops.

        A run this process advances is followed on its board; one another process advances
        (on a cluster any worker; on SQLite `corral serve` while this is a CLI command) is
        followed in the store, which says when it settled."""
        if self.jobs.distributed:
            return await self._wait_stored(run_id)
        if self.board.get(run_id) is None:
            run = await self.runs.get(run_id)
            if run.status not in ACTIVE:
                return run
            if run.worker != self.worker:
                return await self._wait_stored(run_id)
        await self.board.wait_until(run_id, SETTLED)
        return await self.runs.get(run_id)

    async def _wait_stored(self, run_id: str) -> RunRecord:
        await self.stored_waits.wait(run_id)
        return await self.runs.get(run_id)
