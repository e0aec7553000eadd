"""One lstat per entry below a source root, links never followed."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["file", "dir", "link"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """What a path was at a scan: enough to tell whether a call touched it."""

    kind: Kind
    mode: int
    """Permission bits only (``S_IMODE``)."""
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0
    target: str = ""
    """A link's target, as ``readlink`` gives it."""
    uid: int = 0
    gid: int = 0

    def same(self, other: Entry) -> bool:
        """Whether nothing a call can do unseen moved between the two scans.

        The ctime moves on every content, mode or link change and cannot be set back by
        the writer; folders compare by kind and mode only (their mtime follows their
        entries, which are compared themselves)."""
        if (self.kind, self.mode, self.uid, self.gid) != (
            other.kind,
            other.mode,
            other.uid,
            other.gid,
        ):
            return False
        if self.kind == "dir":
            return True
        if self.kind == "link":
            return self.target == other.target
        return (self.ino, self.size, self.mtime_ns, self.ctime_ns) == (
            other.ino,
            other.size,
            other.mtime_ns,
            other.ctime_ns,
        )


def entry_of(path: str, info: os.stat_result) -> Entry | None:
    mode, uid, gid = info.st_mode, info.st_uid, info.st_gid
    if stat.S_ISDIR(mode):
        return Entry(kind="dir", mode=stat.S_IMODE(mode), uid=uid, gid=gid)
    if stat.S_ISLNK(mode):
        return Entry(kind="link", mode=0o777, target=os.readlink(path), uid=uid, gid=gid)
    if stat.S_ISREG(mode):
        return Entry(
            uid=uid,
            gid=gid,
            kind="file",
            mode=stat.S_IMODE(mode),
            size=info.st_size,
            mtime_ns=info.st_mtime_ns,
            ctime_ns=info.st_ctime_ns,
            ino=info.st_ino,
        )
    return None  # sockets, fifos, devices: nothing a checkpoint can give back


PLATFORM_AREA = ".corral"
"""The platform's own area at the top of the drive (root's, closed to the sandbox): the
platform writes it during calls (transcripts), and a rewind must never put it back."""


def scan(root: Path) -> dict[str, Entry]:
    """Every file, folder and link below ``root`` by its ``/``-separated relative path,
    but the platform's own area.

    Entries that vanish while the scan runs are left out, as if scanned a moment later."""
    found: dict[str, Entry] = {}
    pending = [("", str(root))]
    while pending:
        prefix, folder = pending.pop()
        try:
            listing = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue  # gone, or closed to the platform: its content cannot be kept either
        with listing:
            for item in listing:
                try:
                    entry = entry_of(item.path, item.stat(follow_symlinks=False))
                except FileNotFoundError:
                    continue
                if entry is None or (not prefix and item.name == PLATFORM_AREA):
                    continue
                name = prefix + item.name
                found[name] = entry
                if entry.kind == "dir":
                    pending.append((name + "/", item.path))
    return found
