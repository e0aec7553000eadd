"""Checkpoints taken around ``execute`` on a real platform: the sandboxed command's writes in
the drive are captured whatever program made them, and a proven reader makes none."""

from __future__ import annotations

from pathlib import Path

from corral.platform import Platform
from corral.shell.checkpoints import restore
from corral.shell.checkpoints.keeper import CheckpointKeeper
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap, shells
from tests.shell.test_checkpoints import describe

pytestmark = needs_bwrap


async def fill(drive: Path, platform: Platform) -> None:
    await platform.admin.set_live("checkpoints", True)
    (drive / "sub").mkdir(parents=True)
    (drive / "sub" / "inner.txt").write_text("inside\n")
    (drive / "notes.txt").write_text("alpha beta\n")
    (drive / "run.sh").write_text("#!/bin/sh\necho run\n")
    (drive / "run.sh").chmod(0o755)
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)


def rewind(keeper: CheckpointKeeper, call_id: str, drive: Path) -> list[str]:
    kept = keeper.load(call_id)
    assert kept is not None and list(kept.sources) == [str(drive.resolve())]
    return restore(drive.resolve(), keeper.blobs, list(kept.sources.values()))


async def test_a_writing_command_leaves_a_checkpoint_that_restores_the_drive(
    platform: Platform, drive: Path
) -> None:
    await fill(drive, platform)
    before = describe(drive)
    command = (
        "sed -i s/alpha/gamma/ notes.txt && rm -r sub && ln -s notes.txt link && "
        "chmod 600 run.sh && mkdir made && echo new > made/file.txt"
    )
    result = await platform.call_tool("execute", {"command": command, "cwd": str(drive)})
    assert not result.is_error, result.text
    assert result.data is not None
    summary = result.data["checkpoint"]
    assert summary["files_changed"] == 7  # notes, sub, sub/inner, link, run.sh, made, file
    assert rewind(shells(platform).checkpoints, summary["id"], drive) == []
    assert describe(drive) == before


async def test_a_proven_reader_makes_no_checkpoint(platform: Platform, drive: Path) -> None:
    await fill(drive, platform)
    for command in ("ls -la", "cat notes.txt | grep alpha 2>/dev/null", "git log -1 || true"):
        result = await platform.call_tool("execute", {"command": command, "cwd": str(drive)})
        assert result.data is not None and "checkpoint" not in result.data, command
    assert not (platform.kernel.settings.data_dir / "checkpoints" / "calls").exists()


async def test_a_source_over_the_entry_limit_gets_a_note_instead_of_a_checkpoint(
    platform: Platform, drive: Path
) -> None:
    await fill(drive, platform)
    await platform.admin.set_live("checkpoint_max_files", 3)
    command = {"command": "echo more >> notes.txt", "cwd": str(drive)}
    over = await platform.call_tool("execute", command)
    assert over.data is not None and "checkpoint" not in over.data
    assert "No checkpoint was kept" in over.text and "checkpoint_max_files" in over.text
    await platform.admin.set_live("checkpoint_max_files", 0)
    off = await platform.call_tool("execute", command)
    assert off.data is not None and "checkpoint" not in off.data
    assert "No checkpoint" not in off.text
    assert (drive / "notes.txt").read_text() == "alpha beta\nmore\nmore\n"


async def test_checkpoints_are_on_by_default(platform: Platform, drive: Path) -> None:
    (drive / "notes.txt").write_text("alpha\n")
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    command = {"command": "echo more >> notes.txt", "cwd": str(drive)}
    result = await platform.call_tool("execute", command)
    assert result.data is not None, result.text
    assert result.data["checkpoint"]["files_changed"] == 1, result.text
    assert rewind(shells(platform).checkpoints, result.data["checkpoint"]["id"], drive) == []
    assert (drive / "notes.txt").read_text() == "alpha\n"


async def test_checkpoints_off_means_no_snapshot(platform: Platform, drive: Path) -> None:
    await platform.admin.set_live("checkpoints", False)
    (drive / "notes.txt").write_text("alpha\n")
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    command = {"command": "echo more >> notes.txt", "cwd": str(drive)}
    result = await platform.call_tool("execute", command)
    assert result.data is not None and "checkpoint" not in result.data, result.text
    assert not (platform.kernel.settings.data_dir / "checkpoints").exists()
    assert shells(platform).checkpoints.open_calls() == set()
    assert not shells(platform).checkpoints._sources  # no snapshot, no watch
