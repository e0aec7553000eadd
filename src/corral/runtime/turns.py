"""Starting turns: a user message, or a conversation continuing by itself.

A turn starts in one transaction that claims the conversation (no turn may be in flight
and no approval open: a parked run keeps its claim), writes the rows that open it and
creates its queued run; then the job runner advances it.

Queued deliveries ride in on whichever turn starts next for the person they continue as:
a report that waited behind a long turn is delivered right after it, and never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, cast

from sqlalchemy.ext.asyncio import AsyncSession

from corral.errors import NotFound, UsageError
from corral.policy.profiles import Profile, parse_profile
from corral.runtime.agents import AgentConfig, load_agent
from corral.runtime.appends import append_rows, write
from corral.runtime.caller_scope import CallerScope
from corral.runtime.conversations import ConversationInfo, claim_conversation
from corral.runtime.deliveries import DeliveryRecord, mark_delivered, take_queued
from corral.runtime.runs import RunKind, RunRecord, Trigger, new_run_id, run_row
from corral.runtime.starting_writes import start_through_writer
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store.runtime_tables import Run
from corral.store.writer import SqliteWriter
from corral.tools.context import Narrowing

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["TurnSpec", "WakeBy", "start_turn", "turn_spec", "wake"]

WakeBy = Literal["ask", "server", "browser"]

_QUEUED = "SELECT 1 FROM conversation_deliveries WHERE conversation_id = ? AND status = 'queued'"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnSpec:
    conversation_id: str
    user_id: str
    agent: str
    model: str
    profile: Profile
    trigger: Trigger
    hop: int
    step_budget: int
    wall_clock_limit_s: float
    narrowing: Narrowing = field(default_factory=Narrowing)
    kind: RunKind = "chat"
    parent_run_id: str | None = None


async def turn_spec(
    rt: RunHost,
    conversation: ConversationInfo,
    *,
    user_id: str,
    trigger: Trigger,
    hop: int = 0,
    model: str | None = None,
    agent: AgentConfig | None = None,
    created: bool = False,
) -> TurnSpec:
    """The run a turn of ``conversation`` gets: its model, profile and limits
    (``created``: the caller made the conversation just now, so no run came before)."""
    agent = agent or await load_agent(rt.kernel.sessions, conversation.agent)
    live = await rt.kernel.live_settings()
    spec = TurnSpec(
        conversation_id=conversation.id,
        user_id=user_id,
        agent=agent.name,
        model=rt.pick_model(model, conversation, agent),
        profile=parse_profile(conversation.profile),
        trigger=trigger,
        hop=hop,
        step_budget=agent.step_budget or int(live["run_step_budget"]),
        wall_clock_limit_s=float(live["run_wall_clock_limit_s"]),
    )
    # A subagent's or a workflow run's conversation keeps its run's narrowing, limits and
    # kind on every later turn (a report from its own background shell, a person writing
    # into it): reach never widens.
    if created:
        return spec
    latest = await rt.runs.list_runs(conversation_id=conversation.id, limit=1)
    if not latest or latest[0].kind == "chat":
        return spec
    last = latest[0]
    return replace(
        spec,
        narrowing=last.narrowing,
        kind=cast(RunKind, last.kind),
        parent_run_id=last.parent_run_id,
        step_budget=last.step_budget,
        wall_clock_limit_s=last.wall_clock_limit_s,
    )


async def start_turn(
    rt: RunHost, spec: TurnSpec, rows: Sequence[NewRow]
) -> tuple[RunRecord, list[TimelineRow]] | None:
    """Claim the conversation and queue a run opened by ``rows``; None when it is busy."""
    run_id = new_run_id()
    writer = rt.kernel.writer
    if isinstance(writer, SqliteWriter):
        row = _run_row(rt, spec, run_id, [])
        opening = [_opening(r, run_id) for r in rows]
        through = await start_through_writer(writer, row, opening)
        if through is None:
            return None
        if not isinstance(through, str):
            return await _started(rt, spec, RunRecord.of(row), through)

    async def work(session: AsyncSession) -> tuple[RunRecord, list[TimelineRow]] | None:
        if not await claim_conversation(session, spec.conversation_id, run_id):
            return None
        riding = await take_queued(session, spec.conversation_id, user_id=spec.user_id)
        row = _run_row(rt, spec, run_id, riding)
        session.add(row)
        opening = [d.as_row() for d in riding] + list(rows)
        stored = await append_rows(
            session, spec.conversation_id, [_opening(r, run_id) for r in opening]
        )
        await mark_delivered(session, riding, [r.seq for r in stored[: len(riding)]])
        await session.flush()
        return RunRecord.of(row), stored

    started = await write(rt.kernel.sessions, work)
    if started is None:
        return None
    return await _started(rt, spec, *started)


def _run_row(rt: RunHost, spec: TurnSpec, run_id: str, riding: Sequence[DeliveryRecord]) -> Run:
    row = run_row(
        run_id=run_id,
        conversation_id=spec.conversation_id,
        user_id=spec.user_id,
        agent=spec.agent,
        model=spec.model,
        profile=spec.profile,
        narrowing=spec.narrowing,
        trigger=spec.trigger,
        hop=max([spec.hop, *(d.hop for d in riding)]),
        step_budget=spec.step_budget,
        wall_clock_limit_s=spec.wall_clock_limit_s,
        kind=spec.kind,
        parent_run_id=spec.parent_run_id,
    )
    row.worker = rt.worker
    return row


def _opening(row: NewRow, run_id: str) -> NewRow:
    return NewRow(
        kind=row.kind, data=row.data, run_id=run_id, user_id=row.user_id, call_id=row.call_id
    )


async def _started(
    rt: RunHost, spec: TurnSpec, record: RunRecord, stored: list[TimelineRow]
) -> tuple[RunRecord, list[TimelineRow]]:
    """Announce the stored turn in this process and hand its run to the job runner."""
    rt.publish_rows(spec.conversation_id, stored)
    await rt.board.set(record.id, "queued")
    rt.publish_run(spec.conversation_id, record.id, "queued", None, "")
    rt.jobs.submit(record.id)
    return record, stored


async def start_scoped_turn(
    rt: RunHost, scope: CallerScope, spec: TurnSpec, rows: Sequence[NewRow]
) -> tuple[RunRecord, list[TimelineRow]] | None:
    """:func:`start_turn` whose run, when it starts in this process, takes ``scope`` (the
    caller, agent and model the entry point resolved) instead of resolving them again."""
    rt.scopes.offer(spec.conversation_id, scope)
    try:
        started = await start_turn(rt, spec, rows)
    except BaseException:
        rt.scopes.withdraw(spec.conversation_id)
        raise
    if started is None:
        rt.scopes.withdraw(spec.conversation_id)
    return started


async def wake(rt: RunHost, conversation_id: str, *, by: WakeBy = "ask") -> RunRecord | None:
    """Continue a free conversation with its queued deliveries, as the person they name.

    With ``by="ask"`` the host's ``wake_gate`` (if any) may hand the continuation to an open
    browser first; ``"browser"`` starts it as that browser's claim, ``"server"`` as the
    server's own. A closing process starts nothing; the next host delivers them."""
    if rt.closing:
        return None
    # Most runs end with nothing queued: that one read answers them, on the calling thread
    # where the store allows it.
    reader = rt.kernel.reader
    if reader is not None and reader.exists(_QUEUED, (conversation_id,)) is False:
        return None
    queued = await rt.deliveries.list_deliveries(conversation_id, status="queued")
    if not queued:
        return None
    try:
        conversation = await rt.conversations.get(conversation_id)
    except NotFound:
        return None
    if conversation.active_run_id is not None:
        return None
    first = queued[0]
    mine = [d for d in queued if d.user_id == first.user_id]
    trigger: Trigger = "report" if all(d.kind == "report" for d in mine) else "message"
    if by == "browser":
        trigger = "browser"
    elif (
        by == "ask"
        and rt.wake_gate is not None
        and await rt.wake_gate(conversation_id, first.user_id)
    ):
        return None
    try:
        spec = await turn_spec(
            rt,
            conversation,
            user_id=first.user_id,
            trigger=trigger,
            hop=max(d.hop for d in mine),
        )
    except UsageError:
        return None  # no agent or model to continue with: the deliveries stay queued
    started = await start_turn(rt, spec, [])
    return started[0] if started else None
