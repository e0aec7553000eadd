"""Remembered rules past their recheck interval: calls keep the rules they have while one read
runs in the background; a write here is seen at once even while that read is in flight, and a
failed read never reaches a call."""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import cast

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.kernel.remembered_rules import RememberedRules
from corral.platform import Platform


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Sessions:
    """The platform's sessions, with reads that can be made to fail or to wait at a gate once
    their query has run (``entered`` is set when one waits there)."""

    def __init__(self, platform: Platform) -> None:
        self._sessions = platform.kernel.sessions
        self.opened = 0
        self.failing = False
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()

    def __call__(self) -> _Held:
        self.opened += 1
        if self.failing:
            raise OSError("the store went away")
        return _Held(self, self._sessions(), self.gate)

    def begin(self) -> object:
        return self._sessions.begin()


class _Held:
    def __init__(self, owner: Sessions, session: AsyncSession, gate: asyncio.Event | None):
        self._owner, self._session, self._gate = owner, session, gate

    async def __aenter__(self) -> AsyncSession:
        return await self._session.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._gate is not None:
            self._owner.entered.set()
            await self._gate.wait()
        await self._session.__aexit__(kind, exc, tb)


def rules_of(sessions: Sessions, clock: Clock) -> RememberedRules:
    return RememberedRules(cast(async_sessionmaker[AsyncSession], sessions), clock=clock)


async def remember(rules: RememberedRules, platform: Platform, *pattern: str) -> None:
    owner = await platform.caller()
    await rules.remember(
        list(pattern),
        decision="allow",
        scope="user",
        user_id=owner.user_id,
        agent=None,
        created_by=owner.name,
    )


async def shown(rules: RememberedRules, platform: Platform) -> list[str]:
    owner = await platform.caller()
    found = await rules.rules_for(owner.user_id, "default")
    return [rule.show() for rule in found.rules]


async def test_calls_past_the_recheck_keep_the_rules_while_one_read_runs(
    platform: Platform,
) -> None:
    clock = Clock()
    rules = rules_of(Sessions(platform), clock)
    assert await shown(rules, platform) == []
    await remember(platform.kernel.command_rules.remembered, platform, "git", "log")
    clock.now = 1.5  # past the recheck; the rule above came from elsewhere as far as it knows
    owner = await platform.caller()
    statements: list[str] = []

    def seen(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(platform.engine.sync_engine, "before_cursor_execute", seen)
    try:
        answers = await asyncio.gather(
            *(rules.rules_for(owner.user_id, "default") for _ in range(50))
        )
        assert not any(answers)  # none waited for the read
        await rules.settle()
        assert len([s for s in statements if "FROM remembered_rules" in s]) == 1, statements
    finally:
        event.remove(platform.engine.sync_engine, "before_cursor_execute", seen)
    assert await shown(rules, platform) == ["git log"]
    assert rules.is_fresh()


async def test_a_write_here_is_seen_at_once_even_while_a_read_is_in_flight(
    platform: Platform,
) -> None:
    clock, sessions = Clock(), Sessions(platform)
    rules = rules_of(sessions, clock)
    assert await shown(rules, platform) == []
    sessions.gate, clock.now = asyncio.Event(), 1.5
    assert await asyncio.wait_for(shown(rules, platform), 10) == []
    await sessions.entered.wait()  # the background read has its rows and waits at the gate
    gate, sessions.gate = sessions.gate, None
    await remember(rules, platform, "git", "log")
    assert await shown(rules, platform) == ["git log"]
    gate.set()
    await rules.settle()  # the read that began before the write is not kept
    assert await shown(rules, platform) == ["git log"]


async def test_a_failed_read_is_logged_and_tried_again_at_the_next_expiry(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    clock, sessions = Clock(), Sessions(platform)
    rules = rules_of(sessions, clock)
    assert await shown(rules, platform) == []
    sessions.failing, clock.now = True, 1.5
    with caplog.at_level(logging.WARNING, logger="corral.kernel"):
        assert await shown(rules, platform) == []
        await rules.settle()
    assert sessions.opened == 2
    assert "could not re-read the remembered rules" in caplog.text
    assert "the store went away" in caplog.text
    clock.now = 2.0
    assert await shown(rules, platform) == []
    await rules.settle()
    assert sessions.opened == 2  # not before the next expiry
    await remember(platform.kernel.command_rules.remembered, platform, "git", "log")
    sessions.failing, clock.now = False, 2.6
    assert await shown(rules, platform) == []
    await rules.settle()
    assert sessions.opened == 3
    assert await shown(rules, platform) == ["git log"]
