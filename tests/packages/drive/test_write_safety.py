"""fs_write and fs_edit as attack surfaces (issue 28, findings 2 and 3): a replaced file never
keeps setuid or setgid, a new file belongs to the drive's owner, and a pipe, a device or a
link put in place of the target is refused without blocking or writing through it."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections import Counter
from pathlib import Path

import pytest

from corral.platform import Platform
from tests.packages.drive.conftest import call
from tests.swapping import SWAPPER


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.mark.parametrize("bits", [0o4755, 0o2755, 0o6750])
async def test_overwriting_a_setuid_file_clears_setuid_and_setgid(
    platform: Platform, drive: Path, bits: int
) -> None:
    tool = drive / "tool"
    tool.write_text("#!/bin/sh\necho safe\n")
    os.chmod(tool, bits)
    written = await call(
        platform, "fs_write", uri="data://tool", content="#!/bin/sh\nid\n", overwrite=True
    )
    assert written.status == "ok", written.text
    assert mode_of(tool) == bits & 0o777
    os.chmod(tool, bits)
    edited = await call(platform, "fs_edit", uri="data://tool", old="id", new="id -u")
    assert edited.status == "ok", edited.text
    assert (tool.read_text(), mode_of(tool)) == ("#!/bin/sh\nid -u\n", bits & 0o777)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving an owner needs root")
async def test_as_root_what_fs_write_makes_belongs_to_the_drives_owner(
    platform: Platform, drive: Path
) -> None:
    os.chown(drive, 65534, 65534)
    made = await call(platform, "fs_write", uri="data://new/deep/file.txt", content="x\n")
    assert made.status == "ok", made.text
    for part in ("new", "new/deep", "new/deep/file.txt"):
        found = (drive / part).stat()
        assert (found.st_uid, found.st_gid) == (65534, 65534), part
    # A root-owned setuid file replaced by the agent: neither the owner nor the bit survive.
    os.chown(drive / "new" / "deep" / "file.txt", 0, 0)
    os.chmod(drive / "new" / "deep" / "file.txt", 0o4755)
    await call(platform, "fs_write", uri="data://new/deep/file.txt", content="y\n", overwrite=True)
    found = (drive / "new" / "deep" / "file.txt").stat()
    assert (found.st_uid, stat.S_IMODE(found.st_mode)) == (65534, 0o755)


async def test_a_pipe_in_place_of_the_target_is_refused_without_blocking(
    platform: Platform, drive: Path
) -> None:
    os.mkfifo(drive / "feed")
    written = await asyncio.wait_for(
        call(platform, "fs_write", uri="data://feed", content="x", overwrite=True), 30
    )
    assert written.error_code == "not_a_file", written.text
    assert "named pipe" in written.text and str(drive / "feed") in written.text
    assert stat.S_ISFIFO((drive / "feed").lstat().st_mode)


async def test_a_folder_swapped_for_a_link_while_fs_write_runs_never_lets_a_write_out(
    platform: Platform, drive: Path, tmp_path: Path
) -> None:
    outside, stop = tmp_path / "outside", tmp_path / "stop"
    outside.mkdir()
    swapper = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SWAPPER,
        str(drive / "sub"),
        str(outside),
        str(stop),
        stdout=asyncio.subprocess.PIPE,
    )
    outcomes: Counter[str] = Counter()
    try:
        assert swapper.stdout is not None and await swapper.stdout.readline() == b"ready\n"
        for _ in range(300):
            result = await call(
                platform, "fs_write", uri="data://sub/deeper/x.txt", content="x", overwrite=True
            )
            outcomes[result.error_code or "ok"] += 1
    finally:
        stop.touch()
        await asyncio.wait_for(swapper.wait(), 30)
    assert sorted(outside.rglob("*")) == [], outcomes
    assert outcomes["ok"] > 0 and outcomes["policy_denied"] > 0, outcomes
    assert set(outcomes) <= {"ok", "policy_denied", "not_a_folder"}, outcomes  # no crash
