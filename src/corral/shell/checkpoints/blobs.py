"""File contents kept once each, named by their SHA-256."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from pathlib import Path
from typing import BinaryIO

_CHUNK = 1 << 20
_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class BlobStore:
    """A folder of read-only blobs ``ab/cdef…`` under the data folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._ready = False

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, source: Path) -> str:
        """Keep ``source``'s content (once per content) and return its digest.

        The bytes hashed are the bytes written, so a writer changing ``source`` meanwhile
        cannot make a blob whose name disagrees with its content."""
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as src:
            head = src.read(_CHUNK)
            if len(head) < _CHUNK:
                return self._put_bytes(head)
            return self._put_stream(head, src)

    def _put_bytes(self, data: bytes) -> str:
        name = hashlib.sha256(data).hexdigest()
        final = self.path(name)
        if self._reuse(final):
            return name
        scratch = self._scratch()
        with open(os.open(scratch, _NEW, 0o444), "wb") as out:
            out.write(data)
        os.replace(scratch, final)
        return name

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
        return removed

    def _scratch(self) -> Path:
        if not self._ready:
            for prefix in range(256):
                (self.root / f"{prefix:02x}").mkdir(parents=True, exist_ok=True)
            self._ready = True
        scratch = self.root / f".in-{os.getpid()}-{threading.get_ident()}"
        with contextlib.suppress(FileNotFoundError):
            scratch.unlink()  # left by a process that died mid-copy; read-only, so not reopened
        return scratch

    def copy_out(self, digest: str, fd: int) -> None:
        """Write the blob's content to the open descriptor ``fd``."""
        with open(self.path(digest), "rb") as src, os.fdopen(os.dup(fd), "wb") as out:
            shutil.copyfileobj(src, out, _CHUNK)

    def size(self) -> int:
        """Bytes the store holds on disk."""
        total = 0
        for folder, _, names in os.walk(self.root):
            total += sum(os.lstat(os.path.join(folder, name)).st_size for name in names)
        return total


def digest_of(path: Path) -> str:
    """The SHA-256 of ``path``'s content, storing nothing."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
