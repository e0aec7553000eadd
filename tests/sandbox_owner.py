"""Folders and files a test gives the platform, as the sandbox uid must find them.

As root, sandboxed commands run as the sandbox uid, which cannot enter pytest's 0700 tree
(and pytest narrows that tree again whenever any session starts): a data folder for a
platform that runs commands lives in a folder of its own that every user may pass through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def passable_folder(tmp_path: Path, name: str) -> Iterator[Path]:
    """``tmp_path / name``; as root, a folder of its own under /tmp that every user may pass
    through (never list), removed afterwards."""
    if os.geteuid() != 0:
        folder = tmp_path / name
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    root = Path(tempfile.mkdtemp(prefix=f"corral-test-{name}-", dir="/tmp"))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def give_to_sandbox(folder: Path, uid: int) -> None:
    """As root, ``folder`` and everything below it become the sandbox uid's (not as root the
    platform's uid is the sandbox identity and nothing changes hands)."""
    if os.geteuid() == 0:
        for path in (folder, *folder.rglob("*")):
            os.chown(path, uid, uid, follow_symlinks=False)


def git(*args: str, cwd: Path) -> str:
    """git as the test (root) in a repository the sandbox uid owns: git refuses a
    repository of another owner unless it is named safe."""
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
