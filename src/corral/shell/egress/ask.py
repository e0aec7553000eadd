"""Asking a person about a domain no egress rule matches (the policy says ``ask``).

The proxy holds the connection while :class:`EgressQuestion` (put by the caller of the shell
call, which knows the person and the run) offers a pending decision on every surface; the
answer is one of "allow once" (this call), "allow for this agent" (kept in
:class:`ApprovedHosts`, so that person's later calls through that agent reach the host
without asking) or "deny". With no answer within the wait (the live setting
``egress_ask_seconds``, never beyond the call's timeout) the connection is refused, and the
reason says what to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.shell.egress.policy import HostDecision, normalise_host
from corral.shell.egress.proxy import Asker
from corral.store.shell_tables import EgressApprovedHost

__all__ = [
    "ASK_OPTIONS",
    "Answer",
    "ApprovedHosts",
    "AskAnswer",
    "EgressQuestion",
    "asker_for",
]

ASK_OPTIONS = ("allow once", "allow for this agent", "deny")
"""The answers offered, in this order (a person may answer with the number, from 1)."""

Answer = Literal["once", "agent", "deny", "unanswered"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AskAnswer:
    answer: Answer
    decision_id: str = ""
    """The pending decision that was offered (empty when none could be)."""
    detail: str = ""
    """Why there was no answer (the wait ran out, the call ended)."""


class EgressQuestion(Protocol):
    """Offers the pending decision for ``host``:``port`` and waits up to ``wait_seconds``."""

    async def __call__(self, host: str, port: int, *, wait_seconds: float) -> AskAnswer: ...


class ApprovedHosts:
    """Hosts people allowed for an agent ("allow for this agent"), kept in the store.

    Every proxied shell call reads its person's and agent's hosts; that read is kept for
    ``fresh_seconds`` (the platform's ``live_refresh_seconds``), as live settings are, so
    the hot path of a call does no database I/O. A change made through this object applies
    at once; one made by another process (a cluster worker, the CLI) within that time, as a
    change of the egress policy itself does.
    """

    CACHED_MAX = 1024
    """(person, agent) pairs kept at most; past it the cache starts over."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        fresh_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._fresh_seconds = fresh_seconds
        self._clock = clock
        self._read: dict[tuple[str, str], tuple[float, tuple[str, ...]]] = {}
        self._generation = 0
        """Grows with every change made here: a read that began before one is not kept."""

    async def hosts(self, user_id: str, agent: str) -> list[str]:
        key = (user_id, agent)
        now = self._clock()
        kept = self._read.get(key)
        if kept is not None and now - kept[0] < self._fresh_seconds:
            return list(kept[1])
        generation = self._generation
        row = EgressApprovedHost
        query = select(row.host).where(row.user_id == user_id, row.agent == agent)
        async with self._sessions() as session:
            found = tuple(await session.scalars(query))
        if self._fresh_seconds > 0 and generation == self._generation:
            if len(self._read) >= self.CACHED_MAX:
                self._read.clear()
            self._read[key] = (now, found)
        return list(found)

    def _changed(self) -> None:
        self._generation += 1
        self._read.clear()

    async def rows(self, user_id: str, agent: str | None = None) -> list[EgressApprovedHost]:
        """``user_id``'s kept hosts (for ``agent`` only, when named), by agent then host."""
        row = EgressApprovedHost
        query = select(row).where(row.user_id == user_id).order_by(row.agent, row.host)
        if agent is not None:
            query = query.where(row.agent == agent)
        async with self._sessions() as session:
            return list(await session.scalars(query))

    async def forget(self, user_id: str, agent: str, host: str) -> bool:
        """No longer allow ``host`` for ``user_id`` through ``agent``; False if it was not kept."""
        row = EgressApprovedHost
        where = (row.user_id == user_id, row.agent == agent, row.host == normalise_host(host))
        try:
            async with self._sessions.begin() as session:
                found = list(await session.scalars(select(row).where(*where)))
                for kept in found:
                    await session.delete(kept)
        finally:
            self._changed()
        return bool(found)

    async def remember(self, user_id: str, agent: str, host: str, decision_id: str) -> None:
        try:
            async with self._sessions.begin() as session:
                session.add(
                    EgressApprovedHost(
                        user_id=user_id,
                        agent=agent,
                        host=normalise_host(host)[:255],
                        decision_id=decision_id,
                    )
                )
        except IntegrityError:
            pass  # already allowed for this agent (another call's answer came first)
        finally:
            self._changed()


def asker_for(
    question: EgressQuestion,
    *,
    approved: ApprovedHosts,
    user_id: str,
    agent: str,
    wait_seconds: float,
    deadline: float,
) -> Asker:
    """The proxy's asker for one call: waits at most ``wait_seconds`` and never past
    ``deadline`` (``time.monotonic()``, the call's own timeout)."""

    async def ask(host: str, port: int) -> HostDecision:
        wait = min(wait_seconds, deadline - time.monotonic())
        if wait <= 0:
            return _unanswered(host, "the call's timeout leaves no time to ask")
        got = await question(host, port, wait_seconds=wait)
        where = f" (decision {got.decision_id})" if got.decision_id else ""
        if got.answer == "once":
            return HostDecision(
                allowed=True, rule="asked: allow once", reason=f"{host} was allowed once{where}"
            )
        if got.answer == "agent":
            await approved.remember(user_id, agent, host, got.decision_id)
            return HostDecision(
                allowed=True,
                rule="asked: allow for this agent",
                reason=f"{host} was allowed for agent {agent!r}{where}",
            )
        if got.answer == "deny":
            return HostDecision(
                allowed=False,
                rule="asked: denied",
                reason=f"reaching {host} was denied when asked{where}; do not retry it, go on "
                "without it or ask the person why",
            )
        return _unanswered(host, got.detail or "no answer came in time", where)

    return ask


def _unanswered(host: str, why: str, where: str = "") -> HostDecision:
    return HostDecision(
        allowed=False,
        rule="asked: no answer",
        reason=f"{host} matches no allowed domain and {why}{where}, so it was refused: ask the "
        "person to allow it (they answer the pending decision with 'allow for this agent' "
        "when you retry), or an admin adds it to egress.allowed_domains",
    )
