"""Change sets kept in one append-only log, ``<checkpoints>/calls/log``.

One line per event: ``<call id> <JSON>`` keeps a call's change set, ``<call id> -`` forgets
it; the last line naming a call wins. Appending is one write, where a file per change set
cost a create (about 1 ms on the ext4 the platform was measured on). Change sets kept the
old way, one file each (``calls/<call id>.json``), are still read and forgotten.

Every process appends to the same log, holding an exclusive ``flock`` on it and checking
first that the file it holds is still the one at the path: compaction rewrites the live
lines into a new file and renames it over the log while holding the old one's lock, so an
append is never made to a file already replaced. A line torn by a crash (no newline) is
skipped, and the next append starts on a new line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from corral.files import make_private_folder

_APPEND = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_FORGOTTEN = b"-"
COMPACT_FROM = 1 << 20
"""Below this size the log is never rewritten, however much of it is forgotten."""


class ChangeLog:
    """The change sets of kept calls, by call id (ids are checked by the caller)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "log"
        self._lock = threading.RLock()
        self._fd = -1
        """This process's append descriptor on the log."""
        self._inode: int | None = None
        """The log file the index describes."""
        self._read_to = 0
        self._where: dict[str, tuple[int, int]] = {}
        """Each kept call's line in the log (offset, length)."""
        self._dead = 0
        """Bytes of the log no kept change set needs."""

    def append(self, call_id: str, document: dict[str, Any]) -> None:
        """Keep ``document`` as the change set of ``call_id``."""
        text = json.dumps(document, separators=(",", ":"))
        self._write([f"{call_id} {text}\n".encode()])

    def forget(self, call_ids: Sequence[str]) -> None:
        """Forget the change sets of ``call_ids`` (in the log and the old files)."""
        with self._lock:
            self._catch_up()
            known = [c for c in call_ids if c in self._where]
        if known:
            self._write([f"{c} -\n".encode() for c in known])
        for call_id in call_ids:
            with contextlib.suppress(FileNotFoundError):
                (self.folder / f"{call_id}.json").unlink()

    def get(self, call_id: str) -> dict[str, Any] | None:
        """The change set kept for ``call_id``, or None."""
        with self._lock:
            for _ in range(2):  # again when the log was compacted between look and read
                self._catch_up()
                where = self._where.get(call_id)
                if where is None:
                    break
                line = self._line(where)
                if line is not None:
                    return _parsed(line)
        try:
            text = (self.folder / f"{call_id}.json").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        loaded: dict[str, Any] = json.loads(text)
        return loaded

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every kept change set (read now, blocking)."""
        with self._lock:
            for _ in range(2):
                self._catch_up()
                lines = [self._line(where) for where in self._where.values()]
                if None not in lines:
                    break
        for line in lines:
            document = None if line is None else _parsed(line)
            if document is not None:
                yield document
        for path in self.folder.glob("*.json") if self.folder.is_dir() else ():
            with contextlib.suppress(FileNotFoundError, ValueError):
                yield json.loads(path.read_text(encoding="utf-8"))

    def compact(self) -> bool:
        """Rewrite the log without its forgotten lines when they are most of it (and it is
        large enough to matter); whether it was rewritten."""
        with self._lock:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                info = os.fstat(fd)
                if _inode_at(self.path) != info.st_ino:
                    return False  # compacted by another process meanwhile
                self._catch_up()
                if info.st_size < COMPACT_FROM or self._dead * 2 < info.st_size:
                    return False
                scratch = self.folder / f".log-{os.getpid()}-{threading.get_ident()}"
                with open(os.open(scratch, _NEW, 0o600), "wb") as out:
                    for offset, length in self._where.values():
                        out.write(os.pread(fd, length, offset))
                os.replace(scratch, self.path)
                self._inode = None  # read the new log whole next time
                return True
            finally:
                os.close(fd)  # releases the lock, after the rename

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _write(self, lines: list[bytes]) -> None:
        with self._lock:
            fd = self._locked()
            try:
                offset = os.fstat(fd).st_size
                if offset and os.pread(fd, 1, offset - 1) != b"\n":
                    os.write(fd, b"\n")  # a line torn by a crash stays apart
                    offset += 1
                data = b"".join(lines)
                os.write(fd, data)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if self._inode == os.fstat(fd).st_ino and self._read_to == offset:
                self._index(data, offset)  # nothing else came between: no need to read it
                self._read_to = offset + len(data)

    def _locked(self) -> int:
        """This process's append descriptor on the file now at the path, locked."""
        while True:
            if self._fd < 0:
                if not self.folder.is_dir():
                    make_private_folder(self.folder.parent, Path(self.folder.name))
                self._fd = os.open(self.path, _APPEND, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            if _inode_at(self.path) == os.fstat(self._fd).st_ino:
                return self._fd
            fcntl.flock(self._fd, fcntl.LOCK_UN)  # compacted meanwhile: append to the new one
            os.close(self._fd)
            self._fd = -1

    def _catch_up(self) -> None:
        """Index the lines appended since the last look (by any process)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            self._inode, self._read_to, self._where, self._dead = None, 0, {}, 0
            return
        try:
            info = os.fstat(fd)
            if info.st_ino != self._inode:
                self._inode, self._read_to, self._where, self._dead = info.st_ino, 0, {}, 0
            if info.st_size <= self._read_to:
                return
            data = os.pread(fd, info.st_size - self._read_to, self._read_to)
        finally:
            os.close(fd)
        whole = data.rfind(b"\n") + 1  # a torn last line is left until it is ended
        self._index(data[:whole], self._read_to)
        self._read_to += whole

    def _index(self, data: bytes, offset: int) -> None:
        for line in data.splitlines(keepends=True):
            call, _, rest = line.partition(b" ")
            kept, forgotten = rest.endswith(b"}\n"), rest == _FORGOTTEN + b"\n"
            if kept or forgotten:  # else torn by a crash: it says nothing
                previous = self._where.pop(call.decode("ascii", errors="replace"), None)
                if previous is not None:
                    self._dead += previous[1]
            if kept:
                self._where[call.decode("ascii", errors="replace")] = (offset, len(line))
            else:
                self._dead += len(line)
            offset += len(line)

    def _line(self, where: tuple[int, int]) -> bytes | None:
        """The line at ``where`` in the log the index describes; None when the log was
        replaced since."""
        offset, length = where
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            if os.fstat(fd).st_ino != self._inode:
                return None
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads(line.partition(b" ")[2])
    except ValueError:
        return None
    return document


def _inode_at(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
