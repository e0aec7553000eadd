"""File contents kept once each, named by their SHA-256.

Contents under 1 MiB are appended to a pack file (``packs/<id>.pack``, one open per process
until it passes 64 MiB) and named in an append-only index (``packs/index``: digest, pack,
offset, size per line), because creating a file costs about 1 ms on the ext4 the platform
was measured on, and a checkpoint would pay it per changed file. Larger contents are one
read-only file each (``ab/cdef…``). Clean-up forgets unneeded packed contents at once and
rewrites a pack when most of its bytes are forgotten.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

_CHUNK = 1 << 20
_PACK_LIMIT = 64 << 20
_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class _Packed:
    pack: str
    offset: int
    size: int


class BlobStore:
    """Read-only blobs under the data folder: small ones packed, large ones a file each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.packs = root / "packs"
        self._ready = False
        self._lock = threading.RLock()
        self._index: dict[str, _Packed] | None = None
        self._used: dict[str, float] = {}
        """When each packed blob was last kept or reused (clean-up spares recent ones)."""
        self._pack: tuple[str, int, int] | None = None
        """The pack this process appends to, its descriptor and its size (only this
        process writes it)."""
        self._index_fd = -1

    def path(self, digest: str) -> Path:
        """Where a large blob's own file is."""
        return self.root / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        """Whether the store keeps ``digest``'s content."""
        return digest in self._packed() or self.path(digest).is_file()

    def known(self) -> set[str]:
        """Every digest the store keeps."""
        loose = {
            folder.name + blob.name
            for folder in self.root.glob("[0-9a-f][0-9a-f]")
            for blob in folder.iterdir()
        }
        return set(self._packed()) | loose

    def _packed(self) -> dict[str, _Packed]:
        with self._lock:
            if self._index is None:
                self._index = {}
                with contextlib.suppress(FileNotFoundError):
                    text = (self.packs / "index").read_text(encoding="ascii", errors="replace")
                    for line in text.splitlines():
                        parsed = _parse(line)
                        if parsed is not None:
                            self._index[parsed[0]] = parsed[1]
                now = time.time()
                self._used = dict.fromkeys(self._index, now)
            return self._index

    def _append(self, data: bytes) -> str:
        """Keep ``data`` in this process's pack (unless packed already: a small content
        kept loose by an older version is packed again, and the loose copy collected);
        its digest."""
        name = hashlib.sha256(data).hexdigest()
        with self._lock:
            index = self._packed()
            if name in index:
                self._used[name] = time.time()
                return name
            pack, fd, offset = self._open_pack()
            try:
                if os.write(fd, data) != len(data):
                    raise OSError(f"pack {pack}: short write (is the disk full?)")
            except BaseException:
                self._pack = (pack, fd, os.fstat(fd).st_size)  # what did get written
                raise
            self._pack = (pack, fd, offset + len(data))
            # the content is in the pack before the index names it: a crash between the two
            # leaves unnamed bytes, never a name without its content
            line = f"{name} {pack} {offset} {len(data)}\n"
            if self._index_fd < 0:
                self._index_fd = os.open(
                    self.packs / "index",
                    os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o600,
                )
            os.write(self._index_fd, line.encode("ascii"))
            index[name] = _Packed(pack, offset, len(data))
            self._used[name] = time.time()
        return name

    def _open_pack(self) -> tuple[str, int, int]:
        if self._pack is not None:
            if self._pack[2] < _PACK_LIMIT:
                return self._pack
            os.close(self._pack[1])
        self.packs.mkdir(parents=True, exist_ok=True)
        pack = uuid.uuid4().hex
        fd = os.open(self.packs / f"{pack}.pack", _NEW | os.O_APPEND, 0o400)
        self._pack = (pack, fd, 0)
        return self._pack

    def close(self) -> None:
        with self._lock:
            if self._pack is not None:
                os.close(self._pack[1])
                self._pack = None
            self._close_index()

    def _close_index(self) -> None:
        if self._index_fd >= 0:
            os.close(self._index_fd)
            self._index_fd = -1

    def put(self, source: str | os.PathLike[str]) -> str:
        """Keep ``source``'s content (once per content) and return its digest.

        The bytes hashed are the bytes written, so a writer changing ``source`` meanwhile
        cannot make a blob whose name disagrees with its content."""
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            head = _read_head(fd)
        except BaseException:
            os.close(fd)
            raise
        if len(head) < _CHUNK:
            os.close(fd)
            return self._append(head)
        with os.fdopen(fd, "rb") as src:
            return self._put_stream(head, src)

    def _put_stream(self, head: bytes, src: BinaryIO) -> str:
        scratch = self._scratch()
        digest = hashlib.sha256(head)
        with open(os.open(scratch, _NEW, 0o444), "wb") as out:
            out.write(head)
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        name = digest.hexdigest()
        final = self.path(name)
        if self._reuse(final):
            scratch.unlink()
        else:
            os.replace(scratch, final)
        return name

    @staticmethod
    def _reuse(final: Path) -> bool:
        """Whether the blob is already kept; its time is renewed, so that clean-up, which
        spares recently used blobs, never removes one a call is about to reference."""
        try:
            os.utime(final)
        except FileNotFoundError:
            return False
        return True

    def collect(self, referenced: set[str], *, unused_for: float) -> int:
        """Remove the blobs not in ``referenced`` and not used for ``unused_for`` seconds;
        returns how many were removed."""
        cutoff = time.time() - unused_for
        removed = 0
        for folder in self.root.glob("[0-9a-f][0-9a-f]"):
            for blob in folder.iterdir():
                if folder.name + blob.name in referenced:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    if blob.lstat().st_mtime < cutoff:
                        blob.unlink()
                        removed += 1
        with self._lock:
            index = self._packed()
            dropped = [
                name
                for name in index
                if name not in referenced and self._used.get(name, 0.0) < cutoff
            ]
            for name in dropped:
                del index[name]
                self._used.pop(name, None)
            if dropped:
                self._repack()
        return removed + len(dropped)

    def _repack(self) -> None:
        """Rewrite the index to the blobs still kept; a pack of which most bytes are no
        longer kept has its kept blobs moved to the current pack, and is removed."""
        index = self._packed()
        live: dict[str, int] = {}
        for packed in index.values():
            live[packed.pack] = live.get(packed.pack, 0) + packed.size
        current = self._pack[0] if self._pack is not None else ""
        for path in self.packs.glob("*.pack"):
            pack = path.stem
            if pack == current or live.get(pack, 0) * 2 >= path.stat().st_size:
                continue
            moving = [name for name, packed in index.items() if packed.pack == pack]
            for name in moving:
                data = self._read_packed(index[name])
                del index[name]
                used = self._used.get(name, time.time())
                self._append(data)
                self._used[name] = used
            path.unlink()
        lines = "".join(f"{n} {p.pack} {p.offset} {p.size}\n" for n, p in index.items())
        scratch = self.packs / f".index-{os.getpid()}-{threading.get_ident()}"
        with open(os.open(scratch, _NEW, 0o600), "w", encoding="ascii") as out:
            out.write(lines)
        os.replace(scratch, self.packs / "index")
        self._close_index()  # appends go to the new index from now on

    def _read_packed(self, packed: _Packed) -> bytes:
        fd = os.open(self.packs / f"{packed.pack}.pack", os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.pread(fd, packed.size, packed.offset)
        finally:
            os.close(fd)
        if len(data) != packed.size:
            raise OSError(f"pack {packed.pack} is shorter than its index says")
        return data

    def _scratch(self) -> Path:
        if not self._ready:
            for prefix in range(256):
                (self.root / f"{prefix:02x}").mkdir(parents=True, exist_ok=True)
            self._ready = True
        scratch = self.root / f".in-{os.getpid()}-{threading.get_ident()}"
        with contextlib.suppress(FileNotFoundError):
            scratch.unlink()  # left by a process that died mid-copy; read-only, so not reopened
        return scratch

    def read(self, digest: str, limit: int) -> bytes | None:
        """The blob's content, packed or not; None when larger than ``limit`` or missing."""
        packed = self._packed().get(digest)
        try:
            if packed is not None:
                return None if packed.size > limit else self._read_packed(packed)
            with open(self.path(digest), "rb") as src:
                data = src.read(limit + 1)
        except OSError:
            return None
        return None if len(data) > limit else data

    def copy_out(self, digest: str, fd: int) -> None:
        """Write the blob's content to the open descriptor ``fd``."""
        packed = self._packed().get(digest)
        if packed is not None:
            with os.fdopen(os.dup(fd), "wb") as out:
                out.write(self._read_packed(packed))
            return
        with open(self.path(digest), "rb") as src, os.fdopen(os.dup(fd), "wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)

    def size(self) -> int:
        """Bytes the store holds on disk."""
        total = 0
        for folder, _, names in os.walk(self.root):
            total += sum(os.lstat(os.path.join(folder, name)).st_size for name in names)
        return total


def _read_head(fd: int) -> bytes:
    """The first :data:`_CHUNK` bytes of ``fd`` (all of a smaller file), read with a buffer
    of the file's size: a buffer of the full chunk for a file of 1 KB cost more than its
    hash."""
    want = min(os.fstat(fd).st_size + 1, _CHUNK)
    parts: list[bytes] = []
    total = 0
    while total < _CHUNK:
        chunk = os.read(fd, min(want, _CHUNK - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        want = _CHUNK  # it grew past the size it had: read on
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _parse(line: str) -> tuple[str, _Packed] | None:
    """An index line, or None for a line torn by a crash."""
    parts = line.split(" ")
    if len(parts) != 4 or len(parts[0]) != 64 or not set(parts[0]) <= _HEX:
        return None
    if not parts[2].isdigit() or not parts[3].isdigit() or not set(parts[1]) <= _HEX:
        return None
    return parts[0], _Packed(parts[1], int(parts[2]), int(parts[3]))


def digest_of(path: Path) -> str:
    """The SHA-256 of ``path``'s content, storing nothing."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
