"""Who owns the drive on the host: the sandbox uid, when the platform runs as root.

Sandboxed commands run as the unprivileged sandbox uid (setting ``sandbox_uid``), so the
drive, the folder they write, must be that uid's, and no other host user's business:

- the data folder is ``0711`` root: the sandbox uid may pass through it to the drive (the
  bubblewrap binds resolve their source path as that uid), nobody may list it, and what
  else it holds stays private (``private/`` is ``0700``, the database ``0600``);
- the drive is ``0700`` and owned by the sandbox uid, the platform's own area inside it
  (``.corral``) stays root's ``0700``;
- a drive from before (owned by root) is handed over once: every entry but ``.corral`` is
  given to the sandbox uid, walking by descriptors and never following a symlink, so a link
  planted in the drive cannot turn the walk onto a host file. The drive's own owner is
  changed last, so an interrupted hand-over runs again at the next start.

Not as root, the platform's own uid is the sandbox identity and nothing changes hands.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["DATA_FOLDER_MODE", "DRIVE_MODE", "hand_drive_to_sandbox"]

DATA_FOLDER_MODE = 0o711
DRIVE_MODE = 0o700
_PLATFORM_AREA = ".corral"


def _hand_over_tree(drive: Path, uid: int) -> None:
    for folder, dirs, files, dir_fd in os.fwalk(drive, follow_symlinks=False):
        if folder == str(drive) and _PLATFORM_AREA in dirs:
            dirs.remove(_PLATFORM_AREA)
            files = [name for name in files if name != _PLATFORM_AREA]
        for name in (*dirs, *files):
            os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)


def hand_drive_to_sandbox(data_dir: Path, drive: Path, *, uid: int) -> None:
    """As root: the data folder ``0711``, the drive ``0700`` and the sandbox uid's."""
    if os.geteuid() != 0:
        return
    os.chmod(data_dir, DATA_FOLDER_MODE)
    info = os.lstat(drive)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(
            f"the drive {str(drive)!r} is not a folder (a link or a file is there): move it "
            "away and start again; the platform creates the drive"
        )
    if info.st_uid != uid:
        _hand_over_tree(drive, uid)
        os.chown(drive, uid, uid, follow_symlinks=False)
    os.chmod(drive, DRIVE_MODE)  # a folder, checked above: root owns its parent
