"""Whether the sandbox uid can reach and write a folder on the host.

As root, sandboxed commands run as ``sandbox_uid`` with no groups, and bubblewrap resolves
its bind sources as that uid: a data folder under a ``0700`` parent (``/root/...``) is out
of its reach, and then no sandbox tier can work.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["drive_out_of_reach", "reach_advice", "writable_by"]


def reach_advice(uid: int) -> str:
    """What an operator can do when ``uid`` cannot reach the drive."""
    return (
        f"Choose a data folder uid {uid} can reach (for example --data-dir /var/lib/corral), "
        f"or let it pass through the parent named (for example `setfacl -m u:{uid}:x "
        "/root`); the platform hands the drive itself to that uid when it starts"
    )


def writable_by(path: Path, uid: int) -> str | None:
    """Why ``uid`` (with no groups) cannot write in the folder ``path``; None when it can.

    Only the owner and "other" bits count: sandboxed commands run with no groups."""

    def allows(info: os.stat_result, owner_bits: int, other_bits: int) -> bool:
        bits = owner_bits if info.st_uid == uid else other_bits
        return info.st_mode & bits == bits

    for parent in reversed(path.parents):
        try:
            info = os.stat(parent)
        except OSError as exc:
            return f"{str(parent)!r} cannot be read ({exc.strerror})"
        if not allows(info, stat.S_IXUSR, stat.S_IXOTH):
            mode = oct(stat.S_IMODE(info.st_mode))
            return f"uid {uid} cannot pass through {str(parent)!r} (mode {mode})"
    try:
        info = os.stat(path)
    except OSError as exc:
        return f"{str(path)!r} cannot be read ({exc.strerror})"
    if not allows(info, stat.S_IWUSR | stat.S_IXUSR, stat.S_IWOTH | stat.S_IXOTH):
        return f"uid {uid} cannot write in {str(path)!r} (owner {info.st_uid})"
    return None


def drive_out_of_reach(drive: Path, uid: int) -> str | None:
    """Why commands running as ``uid`` cannot write the drive, with what to do; None when
    they can. Start-up refuses commands with it, ``corral doctor`` shows it."""
    why = writable_by(drive, uid)
    if why is None:
        return None
    return (
        f"as root, commands run as uid {uid}, which cannot write the drive: {why}. "
        f"{reach_advice(uid)}"
    )
