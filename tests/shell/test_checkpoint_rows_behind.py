"""A checkpoint's row is written behind its call: a rewind started right after the call
finds it, closing the platform writes the rows still queued, and a row that cannot be
written is logged without failing the call or the rows queued with it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import corral
from corral.platform import Platform
from corral.shell.checkpoints.keeper import CheckpointKeeper
from corral.shell.checkpoints.rewind import rewind_files
from corral.shell.checkpoints.rows import CallScope, CheckpointRows
from corral.store import make_sessionmaker
from tests.shell.conftest import shells


async def change(keeper: CheckpointKeeper, root: Path, call_id: str, text: str) -> None:
    """One call that rewrites ``a.txt``, its checkpoint kept as the platform keeps it."""
    snapshots = await keeper.before([root])
    try:
        (root / "a.txt").write_text(text)
        kept = await keeper.after(snapshots, call_id, CallScope(conversation_id="conv-1"))
    finally:
        keeper.release(snapshots)
    assert kept.files_changed == 1


def source(drive: Path) -> Path:
    drive.mkdir(parents=True, exist_ok=True)
    (drive / "a.txt").write_text("zero\n")
    return drive.resolve()


async def test_a_rewind_right_after_the_calls_finds_their_rows(
    platform: Platform, drive: Path
) -> None:
    root = source(drive)
    keeper = shells(platform).checkpoints
    assert keeper.rows is not None
    await change(keeper, root, "call-1", "one\n")
    await change(keeper, root, "call-2", "two\n")
    # call-2's row is queued, not written (nothing ran since): the rewind must wait for it
    assert keeper.rows.pending >= 1
    outcome = await rewind_files(keeper, "conv-1", "2", writable=[str(root)])
    assert not outcome.refused and [s.call_id for s in outcome.undone] == ["call-2"]
    assert (root / "a.txt").read_text() == "one\n"
    assert keeper.rows.pending == 0


async def test_closing_the_platform_writes_the_rows_still_queued(
    data_dir: Path, drive: Path
) -> None:
    root = source(drive)
    async with corral.open(data_dir) as platform:
        service = shells(platform)
        keeper = service.checkpoints
        assert keeper.rows is not None
        await change(keeper, root, "call-1", "one\n")
        assert keeper.rows.pending == 1
        await service.settle_checkpoints()  # what closing waits for
        assert keeper.rows.pending == 0
        await change(keeper, root, "call-2", "two\n")
        assert keeper.rows.pending == 1
    async with corral.open(data_dir) as platform:
        rows = CheckpointRows(make_sessionmaker(platform.kernel.engine))
        assert [r.call_id for r in await rows.for_conversation("conv-1")] == ["call-1", "call-2"]


async def test_a_row_that_cannot_be_written_is_logged_and_the_others_are_kept(
    platform: Platform, drive: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = source(drive)
    keeper = shells(platform).checkpoints
    assert keeper.rows is not None
    await change(keeper, root, "call-1", "one\n")
    await keeper.flush()
    # a second row for the same call breaks the table's unique call id: a real failed
    # insert, in the same batch as a good row
    await change(keeper, root, "call-1", "two\n")
    await change(keeper, root, "call-3", "three\n")
    with caplog.at_level(logging.ERROR, logger="corral.shell"):
        await keeper.flush()
    assert keeper.rows.lost == 1
    (record,) = [r for r in caplog.records if "could not be written" in r.getMessage()]
    assert "call-1" in record.getMessage() and record.exc_info is not None
    assert [r.call_id for r in await keeper.rows.for_conversation("conv-1")] == [
        "call-1",
        "call-3",
    ]
