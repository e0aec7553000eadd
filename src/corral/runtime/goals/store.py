"""Goal state and the session ledger in the store, changed in one transaction per call.

A change reads the state, computes the new one with :mod:`corral.runtime.goals.rules`,
writes it with a compare-and-set on ``revision`` and inserts the ledger entries of the
cycles it closed, all in one transaction: a refusal, a crash or a lost race leaves nothing
half-applied (a lost race is simply retried on the fresh state).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.runtime.goals.rules import Change
from corral.runtime.goals.state import GoalState
from corral.store import context_tables as ct
from corral.store.meta_reads import MetaReader
from corral.store.tables import utcnow

__all__ = ["GoalStore"]

ATTEMPTS = 8


_HAS_STATE = "SELECT 1 FROM conversation_goals WHERE conversation_id = ?"


class _LostRace(Exception):
    """Another writer changed the state between our read and our write."""


class GoalStore:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], reader: MetaReader | None = None
    ) -> None:
        self._sessions = sessions
        self._reader = reader
        """Answers on the calling thread whether a conversation has a goal state: a run's
        first prompt asks, and most conversations have none."""

    async def load(self, conversation_id: str) -> GoalState:
        reader = self._reader
        if reader is not None and reader.exists(_HAS_STATE, (conversation_id,)) is False:
            return GoalState.from_json(None)
        async with self._sessions() as session:
            raw = await session.scalar(
                select(ct.ConversationGoal.state).where(
                    ct.ConversationGoal.conversation_id == conversation_id
                )
            )
        return GoalState.from_json(raw)

    async def change(self, conversation_id: str, compute: Callable[[GoalState], Change]) -> Change:
        """Apply ``compute`` to the current state and store its result atomically."""
        for attempt in range(ATTEMPTS):
            try:
                async with self._sessions.begin() as session:
                    return await self._change(session, conversation_id, compute)
            except (_LostRace, IntegrityError) as error:
                if attempt == ATTEMPTS - 1:
                    raise RuntimeError(
                        f"goal state of {conversation_id!r} kept changing"
                    ) from error
            except OperationalError as error:
                if attempt == ATTEMPTS - 1 or "locked" not in str(error).lower():
                    raise
        raise AssertionError("unreachable")

    async def _change(
        self,
        session: AsyncSession,
        conversation_id: str,
        compute: Callable[[GoalState], Change],
    ) -> Change:
        g = ct.ConversationGoal
        found = (
            await session.execute(
                select(g.state, g.revision).where(g.conversation_id == conversation_id)
            )
        ).first()
        before = GoalState.from_json(found[0] if found else None)
        change = compute(before)
        now = utcnow()
        if found is None:
            session.add(
                g(
                    conversation_id=conversation_id,
                    state=change.state.to_json(),
                    revision=1,
                    updated_at=now,
                )
            )
            await session.flush()
        else:
            outcome = await session.execute(
                update(g)
                .where(g.conversation_id == conversation_id, g.revision == found[1])
                .values(state=change.state.to_json(), revision=found[1] + 1, updated_at=now)
            )
            if int(getattr(outcome, "rowcount", 0)) != 1:
                raise _LostRace()
        if change.archived:
            await session.execute(
                insert(ct.LedgerEntry),
                [
                    {
                        "conversation_id": conversation_id,
                        "version": draft.version,
                        "outcome": draft.outcome,
                        "entry": draft.entry,
                        "closed_at": now,
                    }
                    for draft in change.archived
                ],
            )
        return change

    async def ledger(self, conversation_id: str) -> list[dict[str, Any]]:
        """The conversation's closed cycles, oldest first, as stored."""
        e = ct.LedgerEntry
        async with self._sessions() as session:
            entries = await session.scalars(
                select(e.entry).where(e.conversation_id == conversation_id).order_by(e.version)
            )
            return [dict(entry) for entry in entries]
