"""The drive belongs to the sandbox uid on the host, and to no other host user (as root)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import corral
from tests.sandbox_owner import passable_folder

UID = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the drive over")


async def test_a_fresh_drive_is_the_sandbox_uids_and_private(data_dir: Path) -> None:
    async with corral.open(data_dir):
        pass
    drive = os.lstat(data_dir / "drive")
    assert (drive.st_uid, drive.st_gid) == (UID, UID)
    assert stat.S_IMODE(drive.st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(data_dir).st_mode) == 0o711  # pass through, never list
    assert stat.S_IMODE(os.lstat(data_dir / "private").st_mode) == 0o700


async def test_an_old_root_drive_is_handed_over_once_without_following_links(
    data_dir: Path, tmp_path: Path
) -> None:
    host_file = tmp_path / "host.txt"
    host_file.write_text("a host file")
    drive = data_dir / "drive"
    (drive / "notes").mkdir(parents=True)
    (drive / "notes" / "a.txt").write_text("old")
    (drive / "escape").symlink_to(host_file)
    (drive / "notes" / "up").symlink_to(tmp_path)
    (drive / ".corral").mkdir()
    (drive / ".corral" / "run.json").write_text("{}")
    async with corral.open(data_dir):
        pass
    for path in (drive, drive / "notes", drive / "notes" / "a.txt", drive / "escape"):
        assert os.lstat(path).st_uid == UID, path
    # The links were changed, never what they point at; the platform's area stays root's.
    assert os.lstat(host_file).st_uid == 0 and os.lstat(tmp_path).st_uid == 0
    assert os.lstat(drive / ".corral").st_uid == 0
    assert os.lstat(drive / ".corral" / "run.json").st_uid == 0
    # Once: a root file written later (by an operator, say) is not taken again.
    (drive / "later.txt").write_text("later")
    async with corral.open(data_dir):
        pass
    assert os.lstat(drive / "later.txt").st_uid == 0


def test_doctor_says_when_the_sandbox_uid_cannot_write_a_folder(data_dir: Path) -> None:
    from corral.shell.reach import writable_by

    tmp_path = data_dir.parent
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o711)
    assert "cannot write" in str(writable_by(mine, UID))  # root's 0700 folder
    os.chown(mine, UID, UID)
    assert writable_by(mine, UID) is None
    os.chmod(tmp_path, 0o700)
    assert "cannot pass through" in str(writable_by(mine, UID))


async def test_a_drive_out_of_the_sandbox_uids_reach_refuses_commands_saying_how_to_fix_it(
    tmp_path: Path,
) -> None:
    with passable_folder(tmp_path, "reach") as root:
        hidden = root / "hidden"
        hidden.mkdir(mode=0o700)
        async with corral.open(hidden / "data") as platform:
            result = await platform.call_tool("execute", {"command": "echo hi"})
    assert result.is_error and result.error_code == "sandbox_unavailable", result.text
    assert f"uid {UID} cannot pass through {str(hidden)!r} (mode 0o700)" in result.text
    assert "--data-dir /var/lib/corral" in result.text and f"setfacl -m u:{UID}:x" in result.text
