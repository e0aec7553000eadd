"""Permission rules people remembered when they answered an approval, kept in the store.

A remembered rule is a prefix rule with a scope: ``agent`` (the person's calls through that
agent), ``user`` (all their agents) or ``project`` (everyone's; only an admin may choose
it). Remembering deduplicates and subsumes within one scope and owner: a rule already
covered by a stored one is not added, and stored rules the new one covers are removed (a new
``git log`` rule removes a stored ``git log --oneline``). The rows are read into memory and
read again at most once a second (another process may have added one) and at once after a
write here, so matching a call costs no query. The look a second later runs in one task of its
own while calls keep the rows they have (:mod:`corral.kernel.background_refresh`); only when
there are none (at the start, and after a write here) do calls wait, all for one read.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound, UsageError
from corral.kernel.background_refresh import BackgroundRefresh
from corral.policy.command_rules import Decision, PrefixRule, RuleOrigin, RuleSet

if TYPE_CHECKING:
    from corral.store import rule_tables as rt

__all__ = ["RememberOutcome", "RememberedRules", "Scope"]

Scope = Literal["agent", "user", "project"]
SCOPES: tuple[Scope, ...] = ("agent", "user", "project")


@dataclass(frozen=True, slots=True, kw_only=True)
class RememberOutcome:
    """What remembering did: the rule now in force, whether it is new, what it replaced."""

    rule: PrefixRule
    added: bool
    replaced: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    rule: PrefixRule
    user_id: str
    agent: str | None


class RememberedRules:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        recheck_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._recheck_s = recheck_s
        self._clock = clock
        self._rows: list[_Row] | None = None
        self._read_at = float("-inf")
        self._sets: dict[tuple[str, str], RuleSet] = {}
        self._writes = 0
        """Grows with every write here: a read that began before one is not kept."""
        self._loading = asyncio.Lock()
        self._recheck = BackgroundRefresh("the remembered rules")
        self.generation = 0
        """Changes each time the remembered rules change (here or, once read, elsewhere)."""

    def is_fresh(self) -> bool:
        """Read less than a recheck interval ago and not written since."""
        return self._rows is not None and self._clock() - self._read_at < self._recheck_s

    async def rules_for(self, user_id: str, agent: str) -> RuleSet:
        """The remembered rules that apply to ``user_id``'s calls through ``agent``."""
        rows = await self._current()
        kept = rows is self._rows  # not rows a write here overtook
        found = self._sets.get((user_id, agent)) if kept else None
        if found is None:
            found = RuleSet(
                row.rule
                for row in rows
                if row.rule.origin.scope == "project"
                or (
                    row.user_id == user_id
                    and (row.rule.origin.scope == "user" or row.agent == agent)
                )
            )
            if kept:
                self._sets[(user_id, agent)] = found
        return found

    async def listing(self, *, user_id: str | None = None) -> list[PrefixRule]:
        """Every remembered rule, or those that apply to ``user_id`` (theirs and the
        project's)."""
        rows = await self._current(force=True)
        return [
            row.rule
            for row in rows
            if user_id is None or row.user_id == user_id or row.rule.origin.scope == "project"
        ]

    async def remember(
        self,
        pattern: Sequence[str],
        *,
        decision: Decision,
        scope: Scope,
        user_id: str,
        agent: str | None,
        created_by: str,
        justification: str = "",
        approval_id: str | None = None,
    ) -> RememberOutcome:
        from corral.store import rule_tables as rt  # the table loads with its first use

        if scope not in SCOPES:
            raise UsageError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if scope == "agent" and not agent:
            raise UsageError("a rule remembered for an agent needs the agent's name")
        new = PrefixRule(
            pattern=tuple(pattern),
            decision=decision,
            justification=justification,
            origin=RuleOrigin(remembered_by=created_by, approval_id=approval_id, scope=scope),
        )
        kept_agent = agent if scope == "agent" else None
        same_owner = [
            row
            for row in await self._current(force=True)
            if row.rule.origin.scope == scope
            and (scope == "project" or row.user_id == user_id)
            and row.agent == kept_agent
        ]
        for row in same_owner:
            if row.rule.subsumes(new):
                return RememberOutcome(rule=row.rule, added=False)
        replaced = tuple(row.rule.id for row in same_owner if new.subsumes(row.rule))
        rule_id = "rr_" + secrets.token_hex(6)
        async with self._sessions.begin() as session:
            if replaced:
                await session.execute(
                    delete(rt.RememberedRule).where(rt.RememberedRule.id.in_(replaced))
                )
            session.add(
                rt.RememberedRule(
                    id=rule_id,
                    scope=scope,
                    user_id=user_id,
                    agent=kept_agent,
                    pattern=list(pattern),
                    decision=decision,
                    justification=justification,
                    created_by=created_by,
                    approval_id=approval_id,
                )
            )
        self._forget()
        return RememberOutcome(rule=_rule_of_fields(rule_id, new), added=True, replaced=replaced)

    async def remove(self, rule_id: str) -> None:
        from corral.store import rule_tables as rt  # the table loads with its first use

        async with self._sessions.begin() as session:
            done = await session.execute(
                delete(rt.RememberedRule).where(rt.RememberedRule.id == rule_id)
            )
        self._forget()
        if not getattr(done, "rowcount", 0):
            raise NotFound(f"no remembered rule {rule_id!r}; `corral rules list` shows them")

    async def settle(self) -> None:
        """Wait for the look in flight, if any (before the store closes)."""
        await self._recheck.settle()

    def _forget(self) -> None:
        self._rows = None
        self._sets = {}
        self._writes += 1

    async def _current(self, *, force: bool = False) -> list[_Row]:
        rows = self._rows
        if force or self._recheck_s <= 0:
            return await self._read()
        if rows is None:
            async with self._loading:
                rows = self._rows
                return rows if rows is not None else await self._read()
        if self._clock() - self._read_at >= self._recheck_s:
            self._recheck.start(self._read_in_background)
        return rows

    async def _read_in_background(self) -> None:
        writes, started = self._writes, self._clock()
        try:
            await self._read()
        except Exception:
            if writes == self._writes:
                self._read_at = started  # tried again at the next expiry, not by every call
            raise

    async def _read(self) -> list[_Row]:
        from corral.store import rule_tables as rt  # the table loads with its first use

        writes, now = self._writes, self._clock()
        async with self._sessions() as session:
            found = (await session.execute(select(rt.RememberedRule))).scalars().all()
        rows = [_row(r) for r in sorted(found, key=lambda r: r.created_at)]
        if writes != self._writes:
            return rows  # a write here overtook this read: the next call reads again
        if self._rows is None or [r.rule for r in rows] != [r.rule for r in self._rows]:
            self._sets = {}
            self.generation += 1
        self._rows = rows
        self._read_at = now
        return rows


def _rule_of_fields(rule_id: str, rule: PrefixRule) -> PrefixRule:
    return PrefixRule(
        pattern=rule.pattern,
        decision=rule.decision,
        justification=rule.justification,
        origin=rule.origin,
        id=rule_id,
    )


def _row(row: rt.RememberedRule) -> _Row:
    decision: Decision = "forbidden"
    for known in ("allow", "prompt", "forbidden"):
        if row.decision == known:
            decision = known
    scope: Scope = "agent"
    for name in SCOPES:
        if row.scope == name:
            scope = name
    rule = PrefixRule(
        pattern=tuple(tuple(w) if isinstance(w, list) else str(w) for w in row.pattern),
        decision=decision,
        justification=row.justification,
        origin=RuleOrigin(remembered_by=row.created_by, approval_id=row.approval_id, scope=scope),
        id=row.id,
    )
    return _Row(rule=rule, user_id=row.user_id, agent=row.agent)
