"""An inotify watch over a source, so a scan after the first visits only what moved.

Every folder and every regular file of the source is watched (inotify's own system calls
through ``ctypes``; no dependency). Watches are per inode, so they see writes made through
any mount of the source (bubblewrap's binds, another uid) and, for files, through any other
hard link, even outside the source; a write through a shared mapping is seen when the file
is last closed (``IN_CLOSE_WRITE``), which is when the call's processes have ended.

:meth:`SourceWatch.refresh` turns the events that arrived since the last refresh into a new
entry table: only the named children are looked at again, and a new or changed folder is
scanned whole (its watch is added before its listing is read, so nothing made meanwhile is
missed). Whenever an event cannot be followed exactly, the refresh is a full scan, as without
a watch: a queue overflow, a folder renamed or moved, a folder that could not be watched
(closed to the platform, or the watch limit reached).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from corral.shell.checkpoints.layered import Layered
from corral.shell.checkpoints.scan import PLATFORM_AREA, Entry, entry_of

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000

FOLDER_EVENTS = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
)
FILE_EVENTS = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DONT_FOLLOW
_HEADER = struct.Struct("iIII")

_libc = ctypes.CDLL(None, use_errno=True)
_init = _libc.inotify_init1
_init.argtypes = [ctypes.c_int]
_init.restype = ctypes.c_int
_add = _libc.inotify_add_watch
_add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
_add.restype = ctypes.c_int


class Unwatchable(Exception):
    """The source (or a folder of it) cannot be watched: scan it whole."""


@dataclass(slots=True)
class _Instance:
    """One inotify descriptor and what each of its watches stands for."""

    fd: int
    folders: dict[int, str] = field(default_factory=dict)
    """Folder watch -> its relative path ("" for the root)."""
    files: dict[int, set[tuple[str, str]]] = field(default_factory=dict)
    """File watch -> the (folder, name) pairs it was added under (several for hard links)."""


def _open() -> int:
    fd = int(_init(os.O_NONBLOCK | os.O_CLOEXEC))
    if fd < 0:
        raise Unwatchable(os.strerror(ctypes.get_errno()))
    return fd


def _parent(path: str) -> tuple[str, str]:
    folder, _, name = path.rpartition("/")
    return folder, name


class SourceWatch:
    """Watches one source root; :meth:`scan` first, then :meth:`refresh` after each change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root = str(root)
        self._instance: _Instance | None = None
        self._unwatched: set[str] = set()
        """Files that could not be watched (looked at again on every refresh)."""
        self._finalizer: weakref.finalize[..., SourceWatch] | None = None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._instance = None

    def _full(self, path: str) -> str:
        # strings, not Path objects: building the Paths was a fifth of a refresh's time
        return f"{self._root}/{path}" if path else self._root

    def _add(self, instance: _Instance, path: str, folder: bool) -> None:
        mask = FOLDER_EVENTS if folder else FILE_EVENTS
        wd = int(_add(instance.fd, os.fsencode(self._full(path)), mask))
        if wd >= 0:
            if folder:
                instance.folders[wd] = path
            else:
                instance.files.setdefault(wd, set()).add(_parent(path))
            return
        code = ctypes.get_errno()
        if code in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return  # gone (or replaced) meanwhile: its folder has an event for it
        if folder:
            raise Unwatchable(f"{self._full(path)}: {os.strerror(code)}")
        self._unwatched.add(path)

    def scan(self) -> dict[str, Entry]:
        """Every entry below the root (as :func:`~corral.shell.checkpoints.scan.scan`),
        with a fresh watch on each; a source that cannot be watched is scanned anyway, and
        :meth:`refresh` then scans it whole each time."""
        self.close()
        self._unwatched = set()
        instance = _Instance(fd=_open())
        self._finalizer = weakref.finalize(self, os.close, instance.fd)
        found: dict[str, Entry] = {}
        try:
            self._add(instance, "", folder=True)
            self._walk(instance, "", found)
        except Unwatchable:
            self.close()
            raise
        self._instance = instance
        return found

    def _walk(self, instance: _Instance, start: str, found: dict[str, Entry]) -> None:
        """Entries below folder ``start`` (watched already) into ``found``, watched first."""
        pending = [start]
        while pending:
            folder = pending.pop()
            prefix = f"{folder}/" if folder else ""
            try:
                listing = os.scandir(self._full(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except PermissionError as exc:
                raise Unwatchable(str(exc)) from None
            with listing:
                for item in listing:
                    if not prefix and item.name == PLATFORM_AREA:
                        continue
                    name = prefix + item.name
                    entry = self._look(instance, name, item.is_dir(follow_symlinks=False))
                    if entry is not None:
                        found[name] = entry
                        if entry.kind == "dir":
                            pending.append(name)

    def _look(self, instance: _Instance, path: str, folder: bool | None) -> Entry | None:
        """``path``'s entry, its watch added before the lstat (so a later change has an
        event); ``folder`` None when the kind is not known yet."""
        full = self._full(path)
        if folder is None:
            try:
                folder = stat.S_ISDIR(os.lstat(full).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                return None
        self._add(instance, path, folder)
        try:
            entry = entry_of(full, os.lstat(full))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if entry is not None and (entry.kind == "dir") != folder:
            self._add(instance, path, entry.kind == "dir")  # replaced between the two looks
            entry = entry_of(full, os.lstat(full))
        return entry

    def refresh(self, entries: Mapping[str, Entry]) -> tuple[Mapping[str, Entry], set[str] | None]:
        """``entries`` (the table the last scan or refresh returned) brought up to date, and
        the paths looked at again; None when it was a full scan. ``entries`` is left as it
        is, and the table returned shares it (:class:`Layered`): a refresh costs the paths
        events named, not the source. Raises :class:`Unwatchable` when the source cannot be
        watched (the caller scans whole)."""
        instance = self._instance
        if instance is None:
            return self.scan(), None
        dirty = self._drain(instance)
        if dirty is None:
            return self.scan(), None
        dirty.update(self._unwatched)
        if not dirty:
            return entries, set()
        table = Layered.of(entries)
        changes: dict[str, Entry | None] = {}
        touched: set[str] = set()
        try:
            for path in sorted(dirty, key=lambda p: p.count("/")):
                self._revisit(instance, table, changes, path, touched)
        except Unwatchable:
            self.close()
            raise
        return table.changed(changes), touched

    def _revisit(
        self,
        instance: _Instance,
        table: Layered[Entry],
        changes: dict[str, Entry | None],
        path: str,
        touched: set[str],
    ) -> None:
        """Look at ``path`` again: its new state (None: gone) into ``changes``, over
        ``table``."""
        if not path or path == PLATFORM_AREA:
            return
        folder, _ = _parent(path)
        if folder:
            above = _current(table, changes, folder)
            if above is None or above.kind != "dir":
                return  # below a folder that is gone or not scanned: its own visit covers it
        old = _current(table, changes, path)
        new = self._look(instance, path, None)
        touched.add(path)
        if old is not None and old.kind == "dir" and (new is None or not old.same(new)):
            for below in _below(table, changes, path):
                changes[below] = None
                touched.add(below)
        changes[path] = new
        if new is not None and new.kind == "dir" and (old is None or not old.same(new)):
            found: dict[str, Entry] = {}
            self._walk(instance, path, found)
            changes.update(found)
            touched.update(found)

    def _drain(self, instance: _Instance) -> set[str] | None:
        """The paths events named since the last drain; None when only a full scan can
        tell (queue overflow, a folder renamed or moved, the root gone)."""
        dirty: set[str] = set()
        for wd, mask, name in _events(instance.fd):
            if mask & (IN_Q_OVERFLOW | IN_UNMOUNT) or wd < 0:
                return None
            folder = instance.folders.get(wd)
            if folder is not None:
                if mask & IN_ISDIR and mask & (IN_MOVED_FROM | IN_MOVED_TO):
                    return None
                if mask & IN_MOVE_SELF or (not folder and mask & (IN_DELETE_SELF | IN_IGNORED)):
                    return None
                if mask & IN_IGNORED:
                    del instance.folders[wd]
                elif name:
                    dirty.add(f"{folder}/{name}" if folder else name)
                elif folder and not mask & IN_DELETE_SELF:
                    dirty.add(folder)  # the folder's own mode or owner
                continue
            pairs = instance.files.get(wd, set())
            if mask & IN_IGNORED:
                instance.files.pop(wd, None)
                continue
            dirty.update(f"{f}/{n}" if f else n for f, n in pairs)
        return dirty


def _current(table: Layered[Entry], changes: dict[str, Entry | None], path: str) -> Entry | None:
    return changes[path] if path in changes else table.get(path)


def _below(table: Layered[Entry], changes: dict[str, Entry | None], folder: str) -> list[str]:
    """The paths present below ``folder`` (the whole table is read: only when a folder was
    removed or replaced)."""
    prefix = folder + "/"
    below = {path for path in table if path.startswith(prefix)}
    below.update(path for path in changes if path.startswith(prefix))
    return [path for path in below if _current(table, changes, path) is not None]


def _events(fd: int) -> Iterator[tuple[int, int, str]]:
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            raw = data[offset : offset + length].split(b"\0", 1)[0]
            offset += length
            yield wd, mask, os.fsdecode(raw)
