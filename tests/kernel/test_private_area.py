"""The private area ``data://.corral`` is made at start-up as a real folder of the platform's
(issue 28, finding 2); a link or a file there refuses the start with a message saying what
to do, and nothing is made where a link points."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import corral
from corral.errors import ConfigError


async def test_a_fresh_data_folder_has_the_private_area_before_any_command(
    data_dir: Path,
) -> None:
    async with corral.open(data_dir):
        private = data_dir / "drive" / ".corral"
        found = private.lstat()
        assert stat.S_ISDIR(found.st_mode) and stat.S_IMODE(found.st_mode) == 0o700
        assert found.st_uid == os.geteuid()
        assert (private / "conversations").is_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="a folder of another user needs root")
async def test_a_private_area_made_by_another_user_is_taken_back(data_dir: Path) -> None:
    private = data_dir / "drive" / ".corral"
    private.mkdir(parents=True, mode=0o777)
    os.chown(private, 65534, 65534)
    os.chmod(private, 0o777)
    async with corral.open(data_dir):
        found = private.lstat()
        assert (found.st_uid, stat.S_IMODE(found.st_mode)) == (os.geteuid(), 0o700)


@pytest.mark.parametrize("planted", [".corral", ".corral/conversations"])
async def test_a_planted_link_refuses_the_start_and_nothing_is_made_outside(
    data_dir: Path, tmp_path: Path, planted: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = data_dir / "drive" / planted
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    with pytest.raises(ConfigError) as refused:
        async with corral.open(data_dir):
            pass
    assert str(link) in str(refused.value)
    assert "symbolic link" in str(refused.value) and "remove it" in str(refused.value)
    assert list(outside.iterdir()) == []
    assert stat.S_IMODE(outside.stat().st_mode) != 0o700


def test_the_cli_says_what_to_do_without_a_traceback(data_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (data_dir / "drive").mkdir(parents=True)
    (data_dir / "drive" / ".corral").write_text("not a folder\n")
    done = subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(data_dir), "users", "list"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a regular folder" in done.stderr or "not a folder" in done.stderr, done.stderr
    assert str(data_dir / "drive" / ".corral") in done.stderr
    assert "Traceback" not in done.stderr
