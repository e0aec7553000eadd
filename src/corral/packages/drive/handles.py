"""Opening the exact file the policy approved.

Policy resolves a target to a real path, then the tool opens it. Between the two, a command
in a sandbox could swap a folder on that path for a symlink; so a file is opened without
following a final symlink and then checked to be the approved path (``/proc/self/fd``).
Writes go through :mod:`corral.files`, which never follows a link below the source's root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from corral.errors import PolicyDenied, ToolError

__all__ = ["open_verified"]


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def _moved(expected: Path) -> PolicyDenied:
    return PolicyDenied(
        f"{str(expected)!r} changed into a link while it was being opened; read it again",
        data={"path": str(expected), "rule": "moved"},
    )


def open_verified(path: Path) -> BinaryIO:
    """Open ``path`` for reading, refusing when it no longer is the approved file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(
            f"{str(path)!r} does not exist; check the name with fs_list", code="not_found"
        ) from None
    except OSError as err:
        if err.errno == 40:  # ELOOP: the final part became a symlink after the check
            raise _moved(path) from None
        raise ToolError(
            f"{str(path)!r} cannot be opened: {err.strerror}", code="unreadable"
        ) from None
    try:
        if os.path.exists("/proc/self/fd") and _fd_path(fd) != str(path):
            raise _moved(path)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(
                f"{str(path)!r} is not a regular file (a device, socket or pipe); only files "
                "can be read",
                code="not_a_file",
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")
