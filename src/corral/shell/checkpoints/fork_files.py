"""A source's files as they were before some of a conversation's steps, in a new folder.

The source is copied as it is now (links as links, modes, times, owners when running as
root; the platform's own area and the new folder itself left out), then the checkpoints of
the steps being gone back over are restored onto the copy with
:func:`~corral.shell.checkpoints.restore.restore`, so the source itself is never written."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corral.errors import UsageError
from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import Checkpoint
from corral.shell.checkpoints.restore import restore
from corral.shell.checkpoints.scan import PLATFORM_AREA

__all__ = ["FilesCopy", "copy_as_before"]

_AS_ROOT = os.geteuid() == 0


@dataclass(slots=True, kw_only=True)
class FilesCopy:
    folder: Path
    restored: int = 0
    """Paths put back as they were before the steps."""
    uncopied: list[str] = field(default_factory=list)
    """Paths the copy could not read (they are missing from the new folder)."""
    unrestored: list[str] = field(default_factory=list)
    """Paths unreadable when their checkpoint was taken (left as they are now)."""


def _give_owners(root: Path, into: Path) -> None:
    """As root, each copied entry (links included) gets the owner of its original."""
    for folder, folders, files in os.walk(into):
        for name in (*folders, *files):
            copied = Path(folder) / name
            original = root / copied.relative_to(into)
            with contextlib.suppress(FileNotFoundError):
                info = os.lstat(original)
                os.lchown(copied, info.st_uid, info.st_gid)
    info = os.lstat(root)
    os.lchown(into, info.st_uid, info.st_gid)


def _copy_tree(root: Path, into: Path) -> list[str]:
    """Copy ``root`` into the new folder ``into``; the paths that could not be copied."""

    def ignored(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        left = {n for n in names if here / n == into}
        return left | ({PLATFORM_AREA} & set(names) if here == root else set())

    failed: list[str] = []
    try:
        shutil.copytree(root, into, symlinks=True, ignore=ignored)
    except shutil.Error as exc:
        failed = sorted(os.path.relpath(str(entry[0]), root) for entry in exc.args[0])
    if _AS_ROOT and into.is_dir():
        _give_owners(root, into)
    return failed


def copy_as_before(
    root: Path, into: Path, blobs: BlobStore, checkpoints: Sequence[Checkpoint]
) -> FilesCopy:
    """Copy the source ``root`` into ``into`` (a folder that must not exist yet, whose
    parent does) as it was before the first of ``checkpoints`` (oldest first, each the
    change set of one step in ``root``); ``root`` itself is only read."""
    if os.path.lexists(into):
        raise UsageError(f"{into} exists already: name a new folder for the files")
    if not into.parent.is_dir():
        raise UsageError(f"{into.parent} is not a folder: make it first, or name another")
    uncopied = _copy_tree(root, into)
    restored = len({path for checkpoint in checkpoints for path in checkpoint.priors})
    unrestored = restore(into, blobs, checkpoints) if checkpoints else []
    return FilesCopy(folder=into, restored=restored, uncopied=uncopied, unrestored=unrestored)
