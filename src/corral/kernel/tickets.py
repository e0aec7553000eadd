"""Session tickets: a short-lived bearer token for each run's shell commands.

A run's commands get ``CORRAL_TICKET`` so a skill's scripts can call the API as the run's
user, reaching only what that user may reach. A ticket is scoped to one run (its user and
conversation), is dead the moment the run ends (the run-end hook deletes it) and after
``lifetime`` in any case, so a detached process cannot re-authenticate after its turn. Only
the SHA-256 is stored, in the database, so every process that serves the API knows it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.kernel.tokens import hash_token
from corral.store.meta_reads import MetaReader

__all__ = ["TICKET_PREFIX", "Ticket", "Tickets"]

TICKET_PREFIX = "ctk_"
"""Tickets are told apart from API tokens by this prefix."""
DEFAULT_LIFETIME = timedelta(hours=12)


_HELD = "SELECT 1 FROM run_tickets WHERE run_id = ?"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ticket:
    """Who a live ticket speaks for."""

    run_id: str
    user_id: str
    conversation_id: str


class Tickets:
    """Issues, resolves and ends the tickets of runs."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        lifetime: timedelta = DEFAULT_LIFETIME,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        reader: MetaReader | None = None,
    ) -> None:
        self._sessions = sessions
        self._lifetime = lifetime
        self._clock = clock
        self._reader = reader
        self._issued: dict[str, tuple[str, datetime]] = {}

    async def for_run(self, *, run_id: str, user_id: str, conversation_id: str) -> str:
        """The run's ticket, issued on first use (one per run and process; a new one when
        it expired, for a run parked longer than a ticket lives)."""
        now = self._clock()
        known = self._issued.get(run_id)
        # A margin, so a command started now does not outlive its ticket at once.
        if known is not None and known[1] - now > self._lifetime / 4:
            return known[0]
        token = TICKET_PREFIX + secrets.token_urlsafe(32)
        expires = now + self._lifetime
        from corral.store.skill_tables import RunTicket  # the table loads with its first use

        async with self._sessions.begin() as session:
            session.add(
                RunTicket(
                    token_hash=hash_token(token),
                    run_id=run_id,
                    user_id=user_id,
                    conversation_id=conversation_id,
                    expires_at=expires,
                )
            )
        self._issued[run_id] = (token, expires)
        return token

    async def resolve(self, token: str) -> Ticket | None:
        """The run a live ticket belongs to; None for an unknown, ended or expired one."""
        if not token.startswith(TICKET_PREFIX):
            return None
        from corral.store.skill_tables import RunTicket  # the table loads with its first use

        async with self._sessions() as session:
            row = await session.get(RunTicket, hash_token(token))
        if row is None:
            return None
        expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
        if expires <= self._clock():
            return None
        return Ticket(run_id=row.run_id, user_id=row.user_id, conversation_id=row.conversation_id)

    async def end_run(self, run_id: str) -> None:
        """The run ended: its tickets are dead from now on, in every process."""
        self._issued.pop(run_id, None)
        reader = self._reader
        if reader is not None and reader.exists(_HELD, (run_id,)) is False:
            return  # most runs run no skill script: answered without a write
        from corral.store.skill_tables import RunTicket  # the table loads with its first use

        async with self._sessions.begin() as session:
            await session.execute(delete(RunTicket).where(RunTicket.run_id == run_id))

    async def live_for(self, run_id: str) -> int:
        """How many live tickets ``run_id`` holds (for tests and diagnostics)."""
        from corral.store.skill_tables import RunTicket  # the table loads with its first use

        async with self._sessions() as session:
            rows = await session.scalars(select(RunTicket).where(RunTicket.run_id == run_id))
            return len(list(rows))
