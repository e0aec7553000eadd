"""fs_write and fs_edit keep a checkpoint of the one path they change, in the same store as
execute's: a run mixing the file tools and the shell rewinds to its start or its middle."""

from __future__ import annotations

from pathlib import Path

from corral.platform import Platform
from corral.shell.checkpoints import Checkpoint, restore
from corral.shell.checkpoints.keeper import CheckpointKeeper
from corral.shell.service import ShellService
from tests.packages.drive.conftest import call
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap
from tests.shell.test_checkpoints import Described, describe

pytestmark = needs_bwrap


def rewind(keeper: CheckpointKeeper, call_ids: list[str], drive: Path) -> Described:
    """Restore the calls' checkpoints (oldest first) and describe the drive after."""
    root = str(drive.resolve())
    found: list[Checkpoint] = []
    for call_id in call_ids:
        kept = keeper.load(call_id)
        assert kept is not None
        found.append(kept.sources[root])
    assert restore(drive.resolve(), keeper.blobs, found) == []
    return describe(drive)


async def test_file_tools_and_shell_calls_rewind_to_the_start_or_the_middle(
    platform: Platform, drive: Path
) -> None:
    (drive / "app.py").write_text("def f():\n    return 1\n")
    (drive / "notes.txt").write_text("alpha\n")
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    await platform.admin.set_live("checkpoints", True)
    states = [describe(drive)]
    ids: list[str] = []
    steps = [
        ("fs_write", {"uri": "data://deep/er/new.txt", "content": "made\n"}),
        ("fs_edit", {"uri": "data://app.py", "old": "return 1", "new": "return 2"}),
        ("execute", {"command": "sed -i s/alpha/beta/ notes.txt && rm app.py", "cwd": str(drive)}),
        ("fs_write", {"uri": "data://notes.txt", "content": "replaced\n", "overwrite": True}),
    ]
    for tool, args in steps:
        result = await call(platform, tool, **args)
        assert result.status == "ok" and result.data is not None, result.text
        ids.append(result.data["checkpoint"]["id"])
        states.append(describe(drive))
    assert len(set(ids)) == len(ids)
    keeper = platform.services.require(ShellService).checkpoints
    assert rewind(keeper, ids[2:], drive) == states[2]
    assert rewind(keeper, ids[:2], drive) == states[0]
