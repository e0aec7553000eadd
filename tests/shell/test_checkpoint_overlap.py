"""Calls on one drive at the same time, with checkpoints on: neither waits for the other.

One call waits on a fifo the other opens, so they cannot take turns (with turns, the
second would wait for the first, which waits for the second). Each change set holds what
moved while its own call was open, and each records the call it overlapped."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from corral.platform import Platform
from corral.tools.results import ToolResult
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap, shells
from tests.shell.test_checkpoints import describe
from tests.shell.test_rewind import rewind

pytestmark = needs_bwrap

WAITER = "echo mine > mine.txt && echo ready && read line < ../gate"
OPENER = "echo other > other.txt && echo go > ../gate"


def prepared(drive: Path, uid: int) -> Path:
    """The drive with a project folder and the fifo beside it; its real root."""
    (drive / "proj").mkdir(parents=True)
    (drive / "proj" / "kept.txt").write_text("kept\n")
    os.mkfifo(drive / "gate")
    give_to_sandbox(drive, uid)
    return drive.resolve()


async def started_waiter(
    platform: Platform, drive: Path, conversation_id: str | None
) -> asyncio.Task[ToolResult]:
    """The waiting call, once it has written its file and blocks on the fifo."""
    ready = asyncio.Event()
    waiter = asyncio.create_task(
        platform.call_tool(
            "execute",
            {"command": WAITER, "cwd": str(drive / "proj"), "timeout": 60},
            conversation_id=conversation_id,
            output=lambda stream, text: ready.set() if "ready" in text else None,
        )
    )
    await asyncio.wait_for(ready.wait(), 30)
    return waiter


async def overlapping(
    platform: Platform, drive: Path, first: str | None = None, second: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The waiter's and the opener's checkpoints: the waiter writes, says it is ready and
    waits on the fifo; the opener starts then, writes and opens the fifo."""
    waiter = await started_waiter(platform, drive, first)
    opener = await platform.call_tool(
        "execute",
        {"command": OPENER, "cwd": str(drive / "proj"), "timeout": 60},
        conversation_id=second,
    )
    waited = await waiter
    for result in (waited, opener):
        assert not result.is_error and result.data is not None, result.text
    return waited.data["checkpoint"], opener.data["checkpoint"]  # type: ignore[index]


async def test_two_calls_on_one_drive_run_at_once_each_with_its_own_change_set(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    root = prepared(drive, platform.kernel.settings.sandbox_uid)
    waited, opened = await overlapping(platform, drive)
    keeper = shells(platform).checkpoints
    mine, other = keeper.load(waited["id"]), keeper.load(opened["id"])
    assert mine is not None and other is not None
    # The opener's file was made while both were open: it is in both. The waiter's own
    # file was made before the opener started: only in the waiter's.
    assert set(mine.sources[str(root)].priors) == {"proj/mine.txt", "proj/other.txt"}
    assert set(other.sources[str(root)].priors) == {"proj/other.txt"}
    assert keeper.overlaps.read(waited["id"]) == {str(root): {opened["id"]: ""}}
    assert keeper.overlaps.read(opened["id"]) == {str(root): {waited["id"]: ""}}
    assert keeper.open_calls() == set()


async def test_rewinding_one_of_two_overlapping_conversations_refuses_the_shared_paths(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    root = prepared(drive, platform.kernel.settings.sandbox_uid)
    start = describe(drive / "proj")
    mine = (await platform.runtime.start_conversation()).id
    other = (await platform.runtime.start_conversation()).id
    _, opened = await overlapping(platform, drive, mine, other)
    after = describe(drive / "proj")
    reason = f"changed while call {opened['id']} (conversation {other}) also ran on this source"
    preview = await platform.rewind_preview(mine, "1", conversation=False)
    assert [(c.path, c.reason) for c in preview.conflicts] == [("proj/other.txt", reason)]
    assert {f.path for f in preview.files or []} == {"proj/mine.txt", "proj/other.txt"}
    code, _, err = await rewind(platform, mine, "--to", "1", "--files-only")
    assert code == 1, err
    assert f"proj/other.txt: {reason}" in " ".join(err.split()) and "proj/mine.txt" not in err
    assert describe(drive / "proj") == after  # refused: the other's file is left alone
    code, out, err = await rewind(platform, mine, "--to", "1", "--files-only", "--force")
    assert code == 0, err
    assert "overwritten: proj/other.txt" in out
    assert describe(drive / "proj") == start
    # The other conversation's step overlapped a call that is gone now: its own check
    # (the file is not as it left it) still stops it.
    refused = await platform.rewind(other, "1", conversation=False)
    assert refused.refused and [c.path for c in refused.conflicts] == ["proj/other.txt"]
    assert str(root) == refused.conflicts[0].root


async def test_overlapping_calls_of_one_conversation_rewind_together_without_conflict(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    prepared(drive, platform.kernel.settings.sandbox_uid)
    start = describe(drive / "proj")
    conversation = (await platform.runtime.start_conversation()).id
    waited, opened = await overlapping(platform, drive, conversation, conversation)
    steps = await platform.rewinds.checkpoints(conversation)
    assert {s.call_id for s in steps} == {waited["id"], opened["id"]}
    earlier = steps[0].call_id
    # Undoing only the later step would undo the earlier one's file too: refused.
    later = await platform.rewind_preview(conversation, "2", conversation=False)
    assert [c.path for c in later.conflicts] == ["proj/other.txt"]
    assert f"call {earlier} (conversation {conversation})" in later.conflicts[0].reason
    # Undoing both: no call outside the rewind overlapped them.
    both = await platform.rewind(conversation, "1", conversation=False)
    assert not both.refused and both.conflicts == []
    assert describe(drive / "proj") == start


def open_gate(drive: Path) -> None:
    with (drive / "gate").open("w") as gate:
        gate.write("go\n")


async def test_a_file_tool_write_while_a_call_runs_is_an_overlap_too(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    root = prepared(drive, platform.kernel.settings.sandbox_uid)
    mine = (await platform.runtime.start_conversation()).id
    other = (await platform.runtime.start_conversation()).id
    waiter = await started_waiter(platform, drive, mine)
    written = await platform.call_tool(
        "fs_write", {"uri": "data://proj/written.txt", "content": "theirs\n"}, conversation_id=other
    )
    assert not written.is_error and written.data is not None, written.text
    await asyncio.to_thread(open_gate, drive)
    waited = await waiter
    assert not waited.is_error and waited.data is not None, waited.text
    call, wrote = waited.data["checkpoint"]["id"], written.data["checkpoint"]["id"]
    assert shells(platform).checkpoints.overlaps.read(wrote) == {str(root): {call: mine}}
    preview = await platform.rewind_preview(mine, "1", conversation=False)
    reason = f"changed while call {wrote} (conversation {other}) also ran on this source"
    assert [(c.path, c.reason) for c in preview.conflicts] == [("proj/written.txt", reason)]


async def test_a_background_shell_refused_leaves_no_window_open(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    await platform.admin.set_live("shell_background_notify", False)
    await platform.admin.set_live("background_shells_per_user", 1)
    root = prepared(drive, platform.kernel.settings.sandbox_uid)
    keeper = shells(platform).checkpoints
    args = {"command": WAITER, "cwd": str(drive / "proj"), "background": True}
    started = await platform.call_tool("execute", args, call_id="bg1")
    assert not started.is_error and started.data is not None, started.text
    refused = await platform.call_tool("execute", args, call_id="bg2")
    assert refused.error_code == "too_many_shells", refused.text
    assert keeper.open_calls() == {"bg1"}  # the refused shell holds no window
    opener = await platform.call_tool("execute", {"command": OPENER, "cwd": str(drive / "proj")})
    assert not opener.is_error and opener.data is not None, opener.text
    service = shells(platform)
    await service.background.wait_ended(started.data["shell_id"], 30)
    await service.settle_checkpoints()
    assert keeper.open_calls() == set()
    kept = keeper.load("bg1")
    assert kept is not None
    assert set(kept.sources[str(root)].priors) == {"proj/mine.txt", "proj/other.txt"}
    assert keeper.overlaps.read("bg1") == {str(root): {opener.data["checkpoint"]["id"]: ""}}
