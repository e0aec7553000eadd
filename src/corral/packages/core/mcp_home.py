"""The home folder of an MCP stdio server: one the server's own uid owns and may write.

As root a server runs as the sandbox uid, so its home cannot sit in ``private/`` (``0700``
root): it is ``<data>/mcp/<name>``, ``0700`` and the sandbox uid's, inside ``<data>/mcp``,
root's ``0711`` (a server may enter its own home, list no other). Both are made and
re-owned through a descriptor opened with ``O_NOFOLLOW``: a link planted where a home
should be is refused, never followed onto a host file. What the platform itself writes
about a server (its stderr log) stays in ``private/``, out of the server's reach, so the
server cannot turn the platform's root writes onto a link it made.

Not as root, the platform's uid owns both folders, ``0700``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from corral.errors import InvalidArguments

__all__ = ["HOMES_MODE", "HOME_MODE", "server_home"]

HOMES_MODE = 0o711
HOME_MODE = 0o700


def _folder(path: Path, *, mode: int, owner: int | None) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise InvalidArguments(
            f"{str(path)!r} is not a folder (a link or a file is there: {exc.strerror}); "
            "move it away and connect the server again"
        ) from None
    try:
        info = os.fstat(fd)
        if owner is not None and (info.st_uid, info.st_gid) != (owner, owner):
            os.fchown(fd, owner, owner)
        if stat.S_IMODE(info.st_mode) != mode:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def server_home(homes: Path, name: str, *, uid: int | None) -> Path:
    """``homes/name``, made (or taken back) for ``uid`` (None: the platform's own uid)."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        raise InvalidArguments(f"{name!r} cannot name an mcp server's folder; pick a plain name")
    _folder(homes, mode=HOMES_MODE if uid is not None else HOME_MODE, owner=None)
    home = homes / name
    _folder(home, mode=HOME_MODE, owner=uid)
    return home
