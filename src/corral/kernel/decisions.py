"""Pending decisions: everything a run waits on a person for, answered from any surface.

An approval, an ``ask_question``, an MCP server's elicitation… each has one row in
``decisions`` (the id of the record it decides). Answering is a compare-and-set on that
row, in the transaction that updates the kind's own record: the first answer wins, from
whichever surface; a later one raises :class:`~corral.errors.AlreadyDecided` naming who
answered, from where and when. A decision not answered by its expiry (``expires_at``, else
``created_at`` plus the live setting ``decisions_expire_days``) is ended by the sweep as a
denial.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import AlreadyDecided, NotFound, UsageError
from corral.store import tables as t

__all__ = [
    "DEFAULT_OFFER",
    "DecisionRecord",
    "DecisionStore",
    "Surface",
    "already_decided",
    "check_surface",
    "open_decision",
]

Surface = Literal["web", "cli", "http", "telegram", "slack", "mcp"]
"""Where a person answered a decision."""

DEFAULT_OFFER: tuple[Surface, ...] = ("web", "cli", "http")
"""Where every decision can be answered; channels and MCP add themselves when they show it."""

_SURFACE_NAMES = {
    "web": "the browser",
    "cli": "the terminal",
    "http": "the API",
    "telegram": "Telegram",
    "slack": "Slack",
    "mcp": "an MCP client",
}


def check_surface(surface: str) -> Surface:
    if surface not in get_args(Surface):
        raise UsageError(f"unknown surface {surface!r}; one of: {', '.join(get_args(Surface))}")
    return surface  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionRecord:
    id: str
    kind: str
    status: str
    """pending, decided, expired or closed (its run ended first)."""
    user_id: str
    conversation_id: str | None
    run_id: str | None
    call_id: str | None
    summary: str
    offered_on: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    answer: dict[str, Any] | None
    decided_by: str | None
    decided_by_name: str | None
    surface: str | None
    decided_at: datetime | None
    note: str | None

    @classmethod
    def of(cls, row: t.Decision) -> DecisionRecord:
        return cls(
            id=row.id,
            kind=row.kind,
            status=row.status,
            user_id=row.user_id,
            conversation_id=row.conversation_id,
            run_id=row.run_id,
            call_id=row.call_id,
            summary=row.summary,
            offered_on=tuple(row.offered_on or ()),
            created_at=t.as_utc(row.created_at),
            expires_at=t.as_utc(row.expires_at) if row.expires_at else None,
            answer=row.answer,
            decided_by=row.decided_by,
            decided_by_name=row.decided_by_name,
            surface=row.surface,
            decided_at=t.as_utc(row.decided_at) if row.decided_at else None,
            note=row.note,
        )

    def expiry(self, default_days: float) -> datetime:
        return self.expires_at or self.created_at + timedelta(days=default_days)

    def to_json(self, *, default_days: float | None = None) -> dict[str, Any]:
        expires = self.expires_at
        if expires is None and default_days is not None:
            expires = self.expiry(default_days)
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "run_id": self.run_id,
            "call_id": self.call_id,
            "summary": self.summary,
            "offered_on": list(self.offered_on),
            "created_at": self.created_at.isoformat(),
            "expires_at": expires.isoformat() if expires else None,
            "answer": self.answer,
            "decided_by": self.decided_by_name or self.decided_by,
            "surface": self.surface,
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
            "note": self.note,
        }


def already_decided(record: DecisionRecord) -> AlreadyDecided:
    """The error a late answer gets: who decided, from where, when (or how it ended)."""
    what = f"{record.kind} {record.id!r}"
    when = record.decided_at.strftime("%Y-%m-%d %H:%M:%S UTC") if record.decided_at else "?"
    if record.status == "decided":
        by = record.decided_by_name or record.decided_by or "someone"
        where = _SURFACE_NAMES.get(record.surface or "", "an earlier version of Corral")
        return AlreadyDecided(f"{what} was already decided by {by} from {where} at {when}")
    if record.status == "expired":
        return AlreadyDecided(f"{what} expired at {when} without an answer ({record.note})")
    return AlreadyDecided(
        f"{what} is already {record.status} ({record.note}); it takes no answer now"
    )


def open_decision(
    session: AsyncSession,
    *,
    id: str,
    kind: str,
    user_id: str,
    conversation_id: str | None,
    run_id: str | None,
    call_id: str | None,
    summary: str,
    offered_on: tuple[str, ...] = DEFAULT_OFFER,
    expires_at: datetime | None = None,
) -> None:
    """Add a pending decision in ``session``: the transaction that stores what it decides."""
    session.add(
        t.Decision(
            id=id,
            kind=kind,
            status="pending",
            user_id=user_id,
            conversation_id=conversation_id,
            run_id=run_id,
            call_id=call_id,
            summary=summary[:300],
            offered_on=list(offered_on),
            created_at=t.utcnow(),
            expires_at=expires_at,
        )
    )


class DecisionStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def get(self, decision_id: str) -> DecisionRecord:
        async with self._sessions() as session:
            row = await session.get(t.Decision, decision_id)
        if row is None:
            raise NotFound(f"no decision {decision_id!r}; `corral inbox` lists yours")
        return DecisionRecord.of(row)

    async def list(
        self,
        *,
        user_id: str | None = None,
        status: str | None = "pending",
        kind: str | None = None,
    ) -> list[DecisionRecord]:
        query = select(t.Decision).order_by(t.Decision.created_at)
        if user_id is not None:
            query = query.where(t.Decision.user_id == user_id)
        if status is not None:
            query = query.where(t.Decision.status == status)
        if kind is not None:
            query = query.where(t.Decision.kind == kind)
        async with self._sessions() as session:
            return [DecisionRecord.of(r) for r in await session.scalars(query)]

    async def decide(
        self,
        session: AsyncSession,
        decision_id: str,
        answer: dict[str, Any],
        *,
        by: str,
        by_name: str,
        surface: Surface,
        note: str | None,
    ) -> None:
        """The compare-and-set, in ``session`` (the transaction that updates the kind's own
        record): raises :class:`AlreadyDecided` unless this is the first answer."""
        outcome = await session.execute(
            update(t.Decision)
            .where(t.Decision.id == decision_id, t.Decision.status == "pending")
            .values(
                status="decided",
                answer=answer,
                decided_by=by,
                decided_by_name=by_name,
                surface=check_surface(surface),
                decided_at=t.utcnow(),
                note=note,
            )
        )
        if getattr(outcome, "rowcount", 0) != 1:
            raise already_decided(await self.get(decision_id))

    async def end(self, session: AsyncSession, decision_id: str, status: str, note: str) -> bool:
        """End a pending decision without an answer (``expired``, ``closed``); False when
        it was not pending any more."""
        outcome = await session.execute(
            update(t.Decision)
            .where(t.Decision.id == decision_id, t.Decision.status == "pending")
            .values(status=status, decided_at=t.utcnow(), note=note)
        )
        return int(getattr(outcome, "rowcount", 0)) == 1

    async def close_for_run(self, session: AsyncSession, run_id: str, note: str) -> None:
        await session.execute(
            update(t.Decision)
            .where(t.Decision.run_id == run_id, t.Decision.status == "pending")
            .values(status="closed", decided_at=t.utcnow(), note=note)
        )

    async def expired(self, now: datetime, default_days: float) -> builtins.list[DecisionRecord]:
        """The pending decisions past their expiry."""
        cut = now - timedelta(days=default_days)
        d = t.Decision
        query = select(d).where(
            d.status == "pending",
            or_(d.expires_at <= now, (d.expires_at.is_(None)) & (d.created_at <= cut)),
        )
        async with self._sessions() as session:
            return [DecisionRecord.of(r) for r in await session.scalars(query)]
