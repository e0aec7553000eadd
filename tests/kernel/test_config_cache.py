"""The configuration snapshot is refreshed once for everyone who finds it stale, through
the store's quick read of the version, and a refresh that an invalidation overtook is not
kept. Past the interval, requests keep the snapshot they have while one check runs in the
background; a failed check never reaches them."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import event, select

from corral.errors import NotFound
from corral.kernel.config import ConfigCache
from corral.platform import Platform
from corral.store import tables as t

FLOOD = "channels_flood_per_minute"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Version:
    """The version read the cache under test uses: through a session of the platform's store,
    optionally held at a gate (``entered`` is set once a read waits there) or failing."""

    def __init__(self, platform: Platform) -> None:
        self._sessions = platform.kernel.sessions
        self.reads = 0
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()
        self.failing = False

    async def __call__(self, key: str) -> int | None:
        self.reads += 1
        if self.failing:
            raise OSError("the store went away")
        if self.gate is not None:
            self.entered.set()
            await self.gate.wait()
        async with self._sessions() as session:
            found = await session.scalar(select(t.Meta.value).where(t.Meta.key == key))
        return None if found is None else int(found)


def cache_of(platform: Platform, clock: Clock, version: Version | None = None) -> ConfigCache:
    """A second cache on the platform's store: the platform's writes reach it as another
    process's would, unless the test invalidates it."""
    return ConfigCache(platform.kernel.sessions, platform.kernel.settings, version, clock=clock)


def counting(platform: Platform) -> tuple[list[str], object]:
    statements: list[str] = []

    def seen(*args: object) -> None:
        statements.append(str(args[2]))

    event.listen(platform.engine.sync_engine, "before_cursor_execute", seen)
    return statements, seen


async def test_requests_that_find_it_stale_share_one_reload(platform: Platform) -> None:
    config = platform.kernel.config
    await config.snapshot()
    statements, seen = counting(platform)
    try:
        config.invalidate()
        snapshots = await asyncio.gather(*(config.snapshot() for _ in range(30)))
        loads = [s for s in statements if "FROM live_settings" in s]
        assert len(loads) == 1, loads
        assert all(s is snapshots[0] for s in snapshots)
        statements.clear()
        for _ in range(5):
            await config.snapshot()  # fresh: nothing read at all
        assert statements == []
    finally:
        event.remove(platform.engine.sync_engine, "before_cursor_execute", seen)


async def test_a_change_made_here_applies_at_once_even_mid_refresh(platform: Platform) -> None:
    config = platform.kernel.config
    config.invalidate()
    refreshing = asyncio.ensure_future(config.snapshot())
    await asyncio.sleep(0)  # the refresh has begun and waits on the store
    await platform.admin.set_live("channels_flood_per_minute", 7)  # invalidates meanwhile
    await refreshing
    assert (await config.dispatch_state()).live["channels_flood_per_minute"] == 7


async def test_readers_past_the_interval_keep_the_snapshot_while_one_check_runs(
    platform: Platform,
) -> None:
    clock = Clock()
    cache = cache_of(platform, clock)
    first = await cache.snapshot()
    await platform.admin.set_live(FLOOD, 7)  # another writer, as far as ``cache`` knows
    clock.now = 1.5  # past live_refresh_seconds
    statements, seen = counting(platform)
    try:
        answers = await asyncio.gather(*(cache.snapshot() for _ in range(50)))
        assert all(answer is first for answer in answers)  # none waited for the check
        await cache.settle()
        assert len([s for s in statements if "FROM meta" in s]) == 1, statements
        assert len([s for s in statements if "FROM live_settings" in s]) == 1, statements
        statements.clear()
        assert (await cache.dispatch_state()).live[FLOOD] == 7
        assert statements == []  # checked at 1.5: fresh again
    finally:
        event.remove(platform.engine.sync_engine, "before_cursor_execute", seen)


async def test_a_failed_check_is_logged_and_tried_again_at_the_next_expiry(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    clock, version = Clock(), Version(platform)
    cache = cache_of(platform, clock, version)
    first = await cache.snapshot()
    version.failing, clock.now = True, 1.5
    with caplog.at_level(logging.WARNING, logger="corral.kernel"):
        assert await cache.snapshot() is first
        await cache.settle()
    assert version.reads == 2
    assert "could not re-read the configuration" in caplog.text
    assert "the store went away" in caplog.text
    clock.now = 2.0
    assert await cache.snapshot() is first
    await cache.settle()
    assert version.reads == 2  # not before the next expiry
    await platform.admin.set_live(FLOOD, 9)
    version.failing, clock.now = False, 2.6
    assert await cache.snapshot() is first
    await cache.settle()
    assert version.reads == 3
    assert (await cache.dispatch_state()).live[FLOOD] == 9


async def test_a_change_made_here_overtakes_a_check_in_flight(platform: Platform) -> None:
    clock, version = Clock(), Version(platform)
    cache = cache_of(platform, clock, version)
    first = await cache.snapshot()
    version.gate, clock.now = asyncio.Event(), 1.5
    assert await asyncio.wait_for(cache.snapshot(), 10) is first
    await version.entered.wait()  # the check waits at the gate
    gate, version.gate = version.gate, None
    await platform.admin.set_live(FLOOD, 7)
    cache.invalidate()  # what the admin API does to its own process's cache
    after = await cache.snapshot()  # waits for a load of its own, not for the held check
    assert after.state.live[FLOOD] == 7
    gate.set()
    await cache.settle()
    assert cache.latest is after  # the check that began before the change was not kept


async def test_with_an_interval_of_zero_every_read_checks_first(platform: Platform) -> None:
    clock = Clock()
    settings = platform.kernel.settings.model_copy(update={"live_refresh_seconds": 0})
    cache = ConfigCache(platform.kernel.sessions, settings, clock=clock)
    await cache.snapshot()
    await platform.admin.set_live(FLOOD, 7)
    assert (await cache.dispatch_state()).live[FLOOD] == 7


async def test_a_user_another_process_just_added_is_found_within_the_interval(
    platform: Platform,
) -> None:
    # A server's snapshot is kept for live_refresh_seconds; the CLI adds a user and a token
    # meanwhile. The token is accepted at once (its lookup checks the version), so the user
    # it names must be found too, not answered "no user" until the snapshot ages.
    clock = Clock()
    server = cache_of(platform, clock, Version(platform))
    await server.snapshot()
    user_id = await platform.kernel.identity.create_user("max", role="member")
    clock.now = 0.1  # well inside the interval: the snapshot counts as fresh
    assert user_id not in (await server.snapshot()).users
    platform.kernel.config = server
    caller = await platform.kernel.caller(user_id)
    assert (caller.user_id, caller.name, caller.role) == (user_id, "max", "member")
    assert user_id in (await server.snapshot()).users  # the checked snapshot is kept
    with pytest.raises(NotFound, match="no user 'nobody'"):
        await platform.kernel.caller("nobody")
