"""Runs in the store: every execution of the agent loop and its status.

Status moves ``queued → running → (parked → queued → running)* → finished | stopped |
failed | partial``. Moves that matter across processes are compare-and-set updates, so only
one worker ever advances a run and a decision resumes it once.

``reason`` is a stable code for how a run ended (``step_budget``, ``wall_clock``,
``stopped``, ``restart``, ``shutdown``, ``model_error``, ``error``); ``detail`` says it in
words.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Update, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound
from corral.policy.profiles import Profile, parse_profile
from corral.store import runtime_tables as rt
from corral.store.tables import utcnow
from corral.tools.context import Narrowing
from corral.tracing.propagation import current_traceparent

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "RunKind",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "Trigger",
    "Wait",
    "new_run_id",
]

RunStatus = Literal["queued", "running", "parked", "finished", "stopped", "failed", "partial"]
RunKind = Literal["chat", "delegate", "workflow"]
Trigger = Literal["user_message", "report", "message", "browser"]
"""``browser``: a report or message continuation that the starter's open browser claimed."""
ACTIVE: frozenset[str] = frozenset({"queued", "running", "parked"})
TERMINAL: frozenset[str] = frozenset({"finished", "stopped", "failed", "partial"})


def new_run_id() -> str:
    return "r_" + secrets.token_hex(8)


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait:
    """Something a parked run waits for: an approval now, a question later (issue 7)."""

    kind: str
    id: str
    call_id: str
    tool: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.id, "call_id": self.call_id, "tool": self.tool}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Wait:
        return cls(kind=raw["kind"], id=raw["id"], call_id=raw["call_id"], tool=raw["tool"])


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    id: str
    conversation_id: str
    kind: str
    parent_run_id: str | None
    user_id: str
    agent: str
    model: str
    profile: Profile
    narrowing: Narrowing
    status: RunStatus
    reason: str | None
    detail: str
    trigger: str
    hop: int
    step_budget: int
    steps: int
    wall_clock_limit_s: float
    active_seconds: float
    waiting: tuple[Wait, ...] = field(default=())
    worker: str | None = None
    lease: int = 0
    stop_requested: bool = False
    trace_parent: str | None = None
    """The W3C traceparent every job of the run continues (see :mod:`corral.tracing`)."""
    created_at: datetime | None = None
    ended_at: datetime | None = None

    @classmethod
    def of(cls, row: rt.Run) -> RunRecord:
        return cls(
            id=row.id,
            conversation_id=row.conversation_id,
            kind=row.kind,
            parent_run_id=row.parent_run_id,
            user_id=row.user_id,
            agent=row.agent,
            model=row.model,
            profile=parse_profile(row.profile),
            narrowing=Narrowing.from_json(row.narrowing),
            status=row.status,  # type: ignore[arg-type]  # only RunStatus values are stored
            reason=row.reason,
            detail=row.detail,
            trigger=row.trigger,
            hop=row.hop,
            step_budget=row.step_budget,
            steps=row.steps,
            wall_clock_limit_s=row.wall_clock_limit_s,
            active_seconds=row.active_seconds,
            waiting=tuple(Wait.from_json(w) for w in row.waiting or ()),
            worker=row.worker,
            lease=row.lease,
            stop_requested=row.stop_requested,
            trace_parent=row.trace_parent,
            created_at=row.created_at,
            ended_at=row.ended_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "kind": self.kind,
            "parent_run_id": self.parent_run_id,
            "user_id": self.user_id,
            "agent": self.agent,
            "model": self.model,
            "profile": self.profile,
            "narrowing": self.narrowing.to_json(),
            "status": self.status,
            "reason": self.reason,
            "detail": self.detail,
            "trigger": self.trigger,
            "hop": self.hop,
            "step_budget": self.step_budget,
            "steps": self.steps,
            "wall_clock_limit_s": self.wall_clock_limit_s,
            "active_seconds": round(self.active_seconds, 3),
            "waiting": [w.to_json() for w in self.waiting],
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
        }


def run_row(
    *,
    run_id: str,
    conversation_id: str,
    user_id: str,
    agent: str,
    model: str,
    profile: Profile,
    narrowing: Narrowing,
    trigger: Trigger,
    hop: int,
    step_budget: int,
    wall_clock_limit_s: float,
    kind: RunKind = "chat",
    parent_run_id: str | None = None,
) -> rt.Run:
    """A new queued run row, to add in the transaction that claims its conversation; it
    keeps the current span's trace context, so its jobs continue that trace wherever they run."""
    return rt.Run(
        id=run_id,
        conversation_id=conversation_id,
        kind=kind,
        parent_run_id=parent_run_id,
        user_id=user_id,
        agent=agent,
        model=model,
        profile=profile,
        narrowing=narrowing.to_json(),
        status="queued",
        detail="",
        trigger=trigger,
        hop=hop,
        step_budget=step_budget,
        steps=0,
        wall_clock_limit_s=wall_clock_limit_s,
        active_seconds=0.0,
        waiting=[],
        stop_requested=False,
        trace_parent=current_traceparent(),
    )


class RunStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def get(self, run_id: str) -> RunRecord:
        found = await self.find(run_id)
        if found is None:
            raise NotFound(f"no run {run_id!r}")
        return found

    async def find(self, run_id: str) -> RunRecord | None:
        async with self._sessions() as session:
            row = await session.get(rt.Run, run_id)
        return RunRecord.of(row) if row is not None else None

    async def list_runs(
        self,
        *,
        conversation_id: str | None = None,
        statuses: Sequence[str] | None = None,
        parent_run_id: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        query = select(rt.Run).order_by(rt.Run.created_at.desc()).limit(limit)
        if parent_run_id is not None:
            query = query.where(rt.Run.parent_run_id == parent_run_id)
        if conversation_id is not None:
            query = query.where(rt.Run.conversation_id == conversation_id)
        if statuses is not None:
            query = query.where(rt.Run.status.in_(list(statuses)))
        async with self._sessions() as session:
            return [RunRecord.of(r) for r in await session.scalars(query)]

    async def move(
        self,
        run_id: str,
        *,
        from_statuses: Sequence[str],
        to: RunStatus,
        held_lease: int | None = None,
        **values: Any,
    ) -> bool:
        """Compare-and-set the status; False when the run was not in ``from_statuses`` (or,
        with ``held_lease``, another worker claimed it since)."""
        async with self._sessions.begin() as session:
            return await move_run(
                session, run_id, from_statuses=from_statuses, to=to, held_lease=held_lease, **values
            )

    async def claim(
        self,
        run_id: str,
        *,
        from_statuses: Sequence[str],
        to: RunStatus,
        bump_lease: bool = False,
        **values: Any,
    ) -> RunRecord | None:
        """:meth:`move`, answering the run as the move left it (None when it did not move):
        one ``UPDATE … RETURNING`` where the database has it, not a write and then a read.
        With ``bump_lease`` the run's lease moves one up (a worker's claim: fencing)."""
        if bump_lease:
            values["lease"] = rt.Run.lease + 1
        async with self._sessions.begin() as session:
            query = _move_query(run_id, from_statuses, to, None, values)
            if not session.get_bind().dialect.update_returning:
                if not int(getattr(await session.execute(query), "rowcount", 0)) == 1:
                    return None
                row = await session.get(rt.Run, run_id, populate_existing=True)
            else:
                returning = query.returning(rt.Run).execution_options(synchronize_session=False)
                row = (await session.scalars(returning)).first()
        return RunRecord.of(row) if row is not None else None

    async def keep_trace(self, run_id: str, traceparent: str) -> None:
        """Make ``traceparent`` the one the run's later jobs continue, unless it has one."""
        async with self._sessions.begin() as session:
            await session.execute(
                update(rt.Run)
                .where(rt.Run.id == run_id, rt.Run.trace_parent.is_(None))
                .values(trace_parent=traceparent)
            )

    async def request_stop(self, run_id: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(rt.Run).where(rt.Run.id == run_id).values(stop_requested=True)
            )

    async def stop_requested(self, run_id: str) -> bool:
        async with self._sessions() as session:
            flag = await session.scalar(select(rt.Run.stop_requested).where(rt.Run.id == run_id))
        return bool(flag)


async def move_run(
    session: AsyncSession,
    run_id: str,
    *,
    from_statuses: Sequence[str],
    to: RunStatus,
    held_lease: int | None = None,
    **values: Any,
) -> bool:
    """Compare-and-set the status; with ``held_lease``, only while the run's lease is still
    that one (a cluster worker's own claim: fencing, see :mod:`corral.runtime.takeover`)."""
    outcome = await session.execute(_move_query(run_id, from_statuses, to, held_lease, values))
    return int(getattr(outcome, "rowcount", 0)) == 1


def _move_query(
    run_id: str,
    from_statuses: Sequence[str],
    to: RunStatus,
    held_lease: int | None,
    values: dict[str, Any],
) -> Update:
    if to in TERMINAL:
        values.setdefault("ended_at", utcnow())
    query = update(rt.Run).where(rt.Run.id == run_id, rt.Run.status.in_(list(from_statuses)))
    if held_lease is not None:
        query = query.where(rt.Run.lease == held_lease)
    return query.values(status=to, updated_at=utcnow(), **values)
