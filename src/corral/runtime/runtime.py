"""The Runtime: conversations, runs and their jobs, reports and the inbox, in one place.

Installed on every platform as ``platform.services["runtime"]`` (and its report sink as
``platform.services["reports"]``). The loop itself lives in :mod:`corral.runtime.loop`;
this class holds what the pieces share and is the Python API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from corral.errors import NotFound, UsageError
from corral.platform.approvals import ApprovalRecord, Decision
from corral.platform.bootstrap import DEFAULT_AGENT
from corral.policy.identity import Caller
from corral.policy.profiles import parse_profile
from corral.runtime import chat as chat_module
from corral.runtime import inbox, loop, parking, recovery, turns
from corral.runtime.agents import AgentConfig, load_agent
from corral.runtime.appends import Appender
from corral.runtime.conversations import ConversationInfo, ConversationStore
from corral.runtime.deliveries import DeliveryRecord, DeliveryStore
from corral.runtime.endings import Outcome, end_run
from corral.runtime.events import EventBus, StatusBoard
from corral.runtime.jobs import JobRunner, LocalJobs
from corral.runtime.models import ModelRegistry, ResolvedModel
from corral.runtime.prompt import PromptBuilder
from corral.runtime.reports import Reports
from corral.runtime.results import RunResult
from corral.runtime.runs import ACTIVE, TERMINAL, RunRecord, RunStore
from corral.runtime.timeline import NewRow, TimelineRow
from corral.runtime.usage import UsageLog
from corral.tools.context import Cancellation, OutputSink
from corral.tools.dispatch import CallRequest
from corral.tools.registry import LoadedTool
from corral.tools.results import ToolResult
from corral.tools.services import CONVERSATION_MODEL, USAGE

if TYPE_CHECKING:
    from corral.platform.core import Platform

__all__ = ["RunEndHook", "Runtime"]

RunEndHook = Callable[[RunRecord, str], Awaitable[None]]
"""Called when a run ends (with its final status): close what it left open."""

SETTLED: frozenset[str] = TERMINAL | {"parked"}


class Runtime:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        sessions = platform.sessions
        self.conversations = ConversationStore(sessions)
        self.appender = Appender(platform.engine)
        self.runs = RunStore(sessions)
        self.deliveries = DeliveryStore(sessions)
        self.events = EventBus()
        self.board = StatusBoard()
        self.models = ModelRegistry(platform.settings)
        self.prompt = PromptBuilder(self.conversations)
        self.jobs: JobRunner = LocalJobs(self.advance_run, self._concurrency)
        self.reports = Reports(self)
        self.worker = recovery.worker_id()
        self.live: dict[str, Cancellation] = {}
        """Cancellations of the runs (and approved calls) executing in this process."""
        self.run_end_hooks: list[RunEndHook] = []
        self.closing = False
        self.usage = UsageLog(platform.logs)

    # -- plumbing shared by the loop's modules ----------------------------------------------

    async def _concurrency(self) -> int:
        return int((await self.platform.live_settings())["runs_max_concurrent"])

    def publish_rows(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """Announce rows this process stored: to the prompt cache, the appender, readers."""
        self.appender.note(conversation_id, rows)
        self.prompt.observe(conversation_id, rows)
        if self.events.has_subscribers(conversation_id):
            for row in rows:
                self.events.publish(conversation_id, {"type": "row", "row": row.to_json()})

    def publish_run(
        self, conversation_id: str, run_id: str, status: str, reason: str | None, detail: str
    ) -> None:
        self.events.publish(
            conversation_id,
            {"type": "run", "run_id": run_id, "status": status, "reason": reason, "detail": detail},
        )

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

    def services_for(self, model: ResolvedModel) -> Mapping[str, Any]:
        """What handlers of a run's calls get as ``ctx.services``: the platform's services,
        the conversation's model and the usage recorder."""
        return {**self.platform.services, CONVERSATION_MODEL: model, USAGE: self.usage}

    async def append(self, conversation_id: str, rows: Sequence[NewRow]) -> list[TimelineRow]:
        """Append rows (one INSERT when this process wrote the last ones) and announce them."""
        stored = await self.appender.append(conversation_id, rows)
        self.publish_rows(conversation_id, stored)
        return stored

    def pick_model(
        self, requested: str | None, conversation: ConversationInfo, agent: AgentConfig
    ) -> str:
        model = (
            requested or conversation.model or agent.model or self.platform.settings.default_model
        )
        if not model:
            raise UsageError(
                f"no model for agent {agent.name!r}: pass --model provider:model, set the "
                "agent's model, or set default_model in corral.toml / CORRAL_DEFAULT_MODEL"
            )
        return model

    async def visible_tools(self, run: RunRecord, caller: Caller) -> list[LoadedTool]:
        request = CallRequest(
            tool="", arguments={}, caller=caller, agent=run.agent, narrowing=run.narrowing
        )
        state = await self.platform.config.dispatch_state()
        return self.platform.dispatcher.visible_tools(request, state)

    # -- conversations ----------------------------------------------------------------------

    async def start_conversation(
        self,
        *,
        agent: str | None = None,
        user: str | None = None,
        model: str | None = None,
        profile: str | None = None,
        title: str = "",
    ) -> ConversationInfo:
        """A new, empty conversation with ``agent`` (default: the default agent)."""
        caller = await self.platform.caller(user)
        config = await load_agent(self.platform.sessions, agent or DEFAULT_AGENT)
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
        conversation = await self.conversations.get(conversation_id)
        conversation.check_access(await self.platform.caller(user))
        return conversation

    async def list_conversations(self, *, user: str | None = None) -> list[ConversationInfo]:
        caller = await self.platform.caller(user)
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
        await loop.advance_run(self, run_id)

    async def wake(self, conversation_id: str) -> RunRecord | None:
        """Continue ``conversation_id`` with its queued deliveries if it is free."""
        if self.closing:
            return None  # a closing process starts nothing; the next host delivers them
        return await turns.wake(self, conversation_id)

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
        caller = await self.platform.caller(user)
        (await self.conversations.get(run.conversation_id)).check_access(caller)
        return run

    async def result(self, run_id: str) -> RunResult:
        run = await self.runs.get(run_id)
        rows = await self.conversations.rows(run.conversation_id, run_id=run_id)
        return RunResult.of(run, rows)

    async def wait_run(self, run_id: str) -> RunRecord:
        """Wait until a run this process advances finishes, parks or stops."""
        if self.board.get(run_id) is None:
            run = await self.runs.get(run_id)
            if run.status not in ACTIVE or run.worker != self.worker:
                return run
        await self.board.wait_until(run_id, SETTLED)
        return await self.runs.get(run_id)

    async def wait_idle(self, conversation_id: str) -> None:
        """Wait until the conversation has no turn in flight and nothing queued (this process)."""
        while True:
            version = self.board.version
            conversation = await self.conversations.get(conversation_id)
            active = conversation.active_run_id
            if active is None:
                if not await self.deliveries.list_deliveries(conversation_id, status="queued"):
                    return
            elif self.board.get(active) is None or self.board.get(active) == "parked":
                return  # another process has it, or it waits for a person
            await self.board.wait_change(version)

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
        who = (await self.platform.caller(user)).name
        outcome = Outcome(status="stopped", reason="stopped", detail=f"stopped by {who}")
        await end_run(self, run, outcome, from_statuses=["parked", "queued"])
        return await self.runs.get(run_id)

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
        self, record: ApprovalRecord, decision: Decision, decider: Caller, note: str | None
    ) -> ToolResult | None:
        """The platform's approval hook: a run's approval resumes that run."""
        return await parking.decide_approval(self, record, decision, decider, note)

    # -- inbox ------------------------------------------------------------------------------

    async def send_message(
        self,
        conversation_id: str,
        text: str,
        *,
        user: str | None = None,
        from_conversation_id: str | None = None,
        from_run_id: str | None = None,
    ) -> DeliveryRecord:
        """Queue an inbox message; the conversation continues as the sender's user."""
        sender = await self.platform.caller(user)
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

    async def close(self) -> None:
        """End the runs this process advances as partial (shutdown), transcripts kept."""
        self.closing = True
        for cancellation in list(self.live.values()):
            cancellation.cancel("shutdown")
        await self.jobs.close()


def runtime_of(platform: Platform) -> Runtime:
    runtime = platform.services.get("runtime")
    if not isinstance(runtime, Runtime):
        raise NotFound("the agent runtime is not installed on this platform")
    return runtime
