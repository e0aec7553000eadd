"""Web UI sessions as server-side records: sign-out, revocation and expiry end them.

The cookie is ``<session id>.<secret>``; only the secret's SHA-256 is stored, so a copy of the
database signs nobody in. Every request reads the session's row (one primary-key read), so
ending it (sign-out, ``corral sessions revoke``, removing the user) takes effect at once in
every serving process.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound
from corral.store import tables as t

__all__ = ["SESSION_SECONDS", "UiSessionRecord", "UiSessions"]

SESSION_SECONDS = 7 * 24 * 3600
"""A session lasts a week from sign-in unless it is ended before."""


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _aware(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes for values stored in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=t.utcnow().tzinfo)


@dataclass(frozen=True, slots=True, kw_only=True)
class UiSessionRecord:
    """One session: whose, begun how (an API token's id, or None for a sign-in link), when."""

    id: str
    user_id: str
    token_id: str | None
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None

    @property
    def is_open(self) -> bool:
        return self.ended_at is None and _aware(self.expires_at) > t.utcnow()

    @classmethod
    def of(cls, row: t.UiSession) -> UiSessionRecord:
        return cls(
            id=row.id,
            user_id=row.user_id,
            token_id=row.token_id,
            created_at=row.created_at,
            expires_at=row.expires_at,
            ended_at=row.ended_at,
        )


class UiSessions:
    """Begins, finds and ends web UI sessions."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def begin(
        self, user_id: str, *, token_id: str | None = None, seconds: int = SESSION_SECONDS
    ) -> str:
        """A new session for ``user_id``; returns the cookie value (shown only to the browser)."""
        session_id = "s_" + secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        now = t.utcnow()
        async with self._sessions.begin() as db:
            db.add(
                t.UiSession(
                    id=session_id,
                    secret_hash=_hash(secret),
                    user_id=user_id,
                    token_id=token_id,
                    created_at=now,
                    expires_at=now + timedelta(seconds=seconds),
                )
            )
        return f"{session_id}.{secret}"

    async def find(self, cookie: str | None) -> UiSessionRecord | None:
        """The open session ``cookie`` stands for; None when unknown, ended or expired."""
        session_id, _, secret = (cookie or "").partition(".")
        if not session_id or not secret:
            return None
        async with self._sessions() as db:
            row = await db.get(t.UiSession, session_id)
        if row is None or not secrets.compare_digest(row.secret_hash, _hash(secret)):
            return None
        record = UiSessionRecord.of(row)
        return record if record.is_open else None

    async def end(self, cookie: str | None) -> None:
        """End the session ``cookie`` stands for (sign-out); nothing when it is none."""
        found = await self.find(cookie)
        if found is not None:
            await self._end(found.id)

    async def list(self, *, user_id: str | None = None) -> list[UiSessionRecord]:
        """The open sessions, oldest first; only ``user_id``'s when given."""
        query = select(t.UiSession).where(t.UiSession.ended_at.is_(None))
        if user_id is not None:
            query = query.where(t.UiSession.user_id == user_id)
        async with self._sessions() as db:
            rows = await db.scalars(query.order_by(t.UiSession.created_at))
            records = [UiSessionRecord.of(row) for row in rows]
        return [record for record in records if record.is_open]

    async def revoke(self, session_id: str) -> None:
        """End the session ``session_id``; NotFound when no open session has that id."""
        if not await self._end(session_id):
            raise NotFound(
                f"no open session {session_id!r}; `corral sessions list` shows the open ones"
            )

    async def _end(self, session_id: str) -> bool:
        async with self._sessions.begin() as db:
            outcome = await db.execute(
                update(t.UiSession)
                .where(t.UiSession.id == session_id, t.UiSession.ended_at.is_(None))
                .values(ended_at=t.utcnow())
            )
        return bool(getattr(outcome, "rowcount", 0))
