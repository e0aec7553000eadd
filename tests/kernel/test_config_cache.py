"""The configuration snapshot is refreshed once for everyone who finds it stale, through
the store's quick read of the version, and a refresh that an invalidation overtook is not
kept."""

from __future__ import annotations

import asyncio

from sqlalchemy import event

from corral.platform import Platform


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
