"""API token lookup without a write on the request path.

Active tokens live in memory as hash → (token id, user id). Every lookup reads the
configuration version (one read-only row, through the store's cheapest read when it has one:
:mod:`corral.store.meta_reads`); creating or revoking a token bumps it, so a
revoked token is refused at once in every process, and a token made by the CLI works at
once on a running server. ``last_used_at`` is written at most once per ``touch_seconds`` per
token, in a task of its own, never while the request waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.kernel.config import CONFIG_VERSION
from corral.store import tables as t

__all__ = ["ActiveToken", "TokenLookup", "hash_token"]

log = logging.getLogger("corral.kernel")

TOUCH_SECONDS = 60.0


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ActiveToken:
    """An API token that is not revoked: its id and its user's id."""

    token_id: str
    user_id: str


class TokenLookup:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        touch_seconds: float = TOUCH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        read_meta: Callable[[str], Awaitable[int | None]] | None = None,
    ) -> None:
        self._sessions = sessions
        self._read_meta = read_meta
        self._touch_seconds = touch_seconds
        self._clock = clock
        self._version: int | None = None
        self._active: dict[str, ActiveToken] = {}
        self._ids: set[str] = set()
        self._touched: dict[str, float] = {}
        self._writes: set[asyncio.Task[None]] = set()

    async def user_for(self, token: str) -> str | None:
        """The user id an API token belongs to, or None for an unknown or revoked token."""
        found = await self.lookup(token)
        return None if found is None else found.user_id

    async def lookup(self, token: str) -> ActiveToken | None:
        """The active token ``token`` is (its id and user), or None."""
        await self._refresh()
        found = self._active.get(hash_token(token))
        if found is None:
            return None
        self._touch(found.token_id)
        return found

    async def is_active(self, token_id: str) -> bool:
        """Whether the token with id ``token_id`` is still active (not revoked, not gone):
        what a session begun with that token checks on every request."""
        await self._refresh()
        return token_id in self._ids

    async def _refresh(self) -> None:
        if self._read_meta is not None:
            version = await self._read_meta(CONFIG_VERSION)
        else:
            async with self._sessions() as session:
                version = await session.scalar(
                    select(t.Meta.value).where(t.Meta.key == CONFIG_VERSION)
                )
        if version != self._version:
            async with self._sessions() as session:
                rows = await session.execute(
                    select(t.ApiToken.token_hash, t.ApiToken.id, t.ApiToken.user_id).where(
                        t.ApiToken.revoked_at.is_(None)
                    )
                )
                self._active = {h: ActiveToken(i, u) for h, i, u in rows}
            self._ids = {a.token_id for a in self._active.values()}
            self._version = version

    def invalidate(self) -> None:
        self._version = None

    def _touch(self, token_id: str) -> None:
        now = self._clock()
        last = self._touched.get(token_id)
        if last is not None and now - last < self._touch_seconds:
            return
        self._touched[token_id] = now
        task = asyncio.create_task(self._write_last_used(token_id))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write_last_used(self, token_id: str) -> None:
        try:
            async with self._sessions.begin() as session:
                await session.execute(
                    update(t.ApiToken)
                    .where(t.ApiToken.id == token_id)
                    .values(last_used_at=t.utcnow())
                )
        except Exception:  # a usage stamp is never worth a failed request or a crash
            log.exception("could not record the use of token %s", token_id)

    async def settle(self) -> None:
        """Wait for the ``last_used_at`` writes still in flight (before the store closes)."""
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
