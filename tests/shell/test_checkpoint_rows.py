"""Checkpoint rows in the conversation and their retention: each writing call that changed
files gets one row (files changed, bytes); retention by count and by days drops rows and
change sets, and clean-up removes the contents no kept checkpoint needs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

import corral
from corral.platform import Platform
from corral.platform.shells_on_demand import ShellsOnDemand
from corral.shell.checkpoints.keeper import PRUNE_EVERY, CheckpointKeeper
from corral.shell.checkpoints.rows import CallScope, CheckpointRows
from corral.store import make_sessionmaker
from corral.store.shell_tables import CheckpointRecord
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap, shells

pytestmark = needs_bwrap


async def run(platform: Platform, drive: Path, command: str, conversation: str) -> str | None:
    result = await platform.call_tool(
        "execute", {"command": command, "cwd": str(drive)}, conversation_id=conversation
    )
    assert not result.is_error and result.data is not None, result.text
    summary = result.data.get("checkpoint")
    return None if summary is None else str(summary["id"])


def keeper_rows(platform: Platform) -> tuple[CheckpointKeeper, CheckpointRows]:
    keeper = shells(platform).checkpoints
    assert keeper.rows is not None
    return keeper, keeper.rows


def fill(drive: Path, uid: int) -> str:
    drive.mkdir(parents=True, exist_ok=True)
    (drive / "a.txt").write_text("first version of a\n")
    (drive / "b.txt").write_text("b\n")
    give_to_sandbox(drive, uid)
    return str(drive.resolve())


async def start(platform: Platform, drive: Path) -> str:
    """Fill the drive and turn checkpoints on; returns the source root checkpoints name."""
    root = fill(drive, platform.kernel.settings.sandbox_uid)
    await platform.admin.set_live("checkpoints", True)
    return root


def blobs_of(keeper: CheckpointKeeper, call_id: str | None, root: str) -> list[str]:
    kept = keeper.load(str(call_id))
    assert kept is not None
    priors = kept.sources[root].priors.values()
    return [p.digest for p in priors if p is not None and p.digest]


async def test_each_call_that_changed_files_is_a_row_of_its_conversation(
    platform: Platform, drive: Path
) -> None:
    await start(platform, drive)
    first = await run(platform, drive, "echo more >> a.txt && rm b.txt", "conv-1")
    assert await run(platform, drive, "ls", "conv-1") is None
    assert await run(platform, drive, "true", "conv-1") is None  # wrote nothing
    other = await run(platform, drive, "echo c > c.txt", "conv-2")
    second = await run(platform, drive, "echo d > d.txt", "conv-1")
    _, rows = keeper_rows(platform)
    kept = await rows.for_conversation("conv-1")
    assert [(r.step, r.call_id, r.tool, r.files_changed) for r in kept] == [
        (1, first, "execute", 2),
        (2, second, "execute", 1),
    ]
    assert kept[0].bytes == len("first version of a\n") + len("b\n")
    assert [r.call_id for r in await rows.for_conversation("conv-2")] == [other]


async def test_retention_by_count_drops_old_checkpoints_and_their_unneeded_contents(
    platform: Platform, drive: Path
) -> None:
    root = await start(platform, drive)
    await platform.admin.set_live("checkpoint_keep_count", 2)
    keeper, rows = keeper_rows(platform)
    ids = [await run(platform, drive, "sed -i s/first/second/ a.txt", "conv-1")]
    (first_version,) = blobs_of(keeper, ids[0], root)
    assert keeper.blobs.has(first_version)
    ids.append(await run(platform, drive, "sed -i s/second/third/ a.txt", "conv-1"))
    ids.append(await run(platform, drive, "sed -i s/third/fourth/ a.txt", "conv-1"))
    assert [r.call_id for r in await rows.for_conversation("conv-1")] == ids[1:]
    assert keeper.load(str(ids[0])) is None and keeper.load(str(ids[1])) is not None
    # the first version is needed by no kept checkpoint, but was used within the grace
    assert keeper.blobs.has(first_version)
    assert keeper.collect(unused_for=0) >= 1
    assert not keeper.blobs.has(first_version)
    needed = [blob for call_id in ids[1:] for blob in blobs_of(keeper, call_id, root)]
    assert len(needed) == 2 and all(keeper.blobs.has(blob) for blob in needed)


async def test_retention_by_days_drops_checkpoints_past_their_age(
    platform: Platform, drive: Path
) -> None:
    await start(platform, drive)
    await platform.admin.set_live("checkpoint_keep_days", 7)
    keeper, rows = keeper_rows(platform)
    aged = await run(platform, drive, "echo one >> a.txt", "conv-1")
    await keeper.flush()  # rows are written behind their calls; this edits the table itself
    sessions = make_sessionmaker(platform.kernel.engine)
    async with sessions.begin() as session:
        await session.execute(
            update(CheckpointRecord)
            .where(CheckpointRecord.call_id == aged)
            .values(created_at=datetime.now(UTC) - timedelta(days=8))
        )
    fresh = await run(platform, drive, "echo two >> a.txt", "conv-1")
    # a pass ran after the first checkpoint; the next comes a minute later (or when a
    # conversation is over its count), not after every call
    assert [r.call_id for r in await rows.for_conversation("conv-1")] == [aged, fresh]
    later = keeper.clock() + PRUNE_EVERY
    keeper.clock = lambda: later
    third = await run(platform, drive, "echo three >> a.txt", "conv-1")
    assert [r.call_id for r in await rows.for_conversation("conv-1")] == [fresh, third]
    assert keeper.load(str(aged)) is None


async def test_the_periodic_sweep_drops_an_aged_checkpoint_without_a_new_one(
    platform: Platform, drive: Path
) -> None:
    await start(platform, drive)
    keeper, rows = keeper_rows(platform)
    aged = await run(platform, drive, "echo one >> a.txt", "conv-1")
    kept = await run(platform, drive, "echo two >> a.txt", "conv-2")
    await keeper.flush()  # rows are written behind their calls; this edits the table itself
    sessions = make_sessionmaker(platform.kernel.engine)
    async with sessions.begin() as session:
        await session.execute(
            update(CheckpointRecord)
            .where(CheckpointRecord.call_id == aged)
            .values(created_at=datetime.now(UTC) - timedelta(days=8))
        )
    on_demand = platform.services.shells  # builds the service on its first sweep
    assert isinstance(on_demand, ShellsOnDemand)
    sweep = on_demand.sweep_checkpoints
    assert sweep in platform.runtime.on_tick  # the hosts' and the cluster workers' pass
    assert await sweep() == []  # 8 days are within the default retention
    await platform.admin.set_live("checkpoint_keep_days", 7)
    assert await sweep() == [aged]
    assert await rows.for_conversation("conv-1") == []
    assert keeper.load(str(aged)) is None
    assert [r.call_id for r in await rows.for_conversation("conv-2")] == [kept]


async def test_rows_and_retention_on_postgresql(data_dir: Path, database_url: str) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        rows = CheckpointRows(make_sessionmaker(platform.kernel.engine))
        for name, conversation in [("a1", "c1"), ("b1", "c2"), ("a2", "c1"), ("n1", None)]:
            scope = CallScope(conversation_id=conversation, tool="execute")
            await rows.add(name, scope, files_changed=1, size=3 * 2**30)
        assert [(r.step, r.call_id, r.bytes) for r in await rows.for_conversation("c1")] == [
            (1, "a1", 3 * 2**30),
            (2, "a2", 3 * 2**30),
        ]
        assert await rows.expired(keep_count=1, keep_days=30) == ["a1"]
        assert [await rows.count(c) for c in ("c1", "c2", None, "c3")] == [2, 1, 1, 0]
        await rows.drop(["a1"])
        assert await rows.expired(keep_count=1, keep_days=30) == []
        assert await rows.count("c1") == 1
