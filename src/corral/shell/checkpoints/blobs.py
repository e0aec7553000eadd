"""File contents kept once each, named by their SHA-256."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

_CHUNK = 1 << 20


class BlobStore:
    """A folder of read-only blobs ``ab/cdef…`` under the data folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, source: Path) -> str:
        """Copy ``source`` in (once per content) and return its digest.

        The copy is taken first and hashed from the copy, so a writer changing ``source``
        meanwhile cannot make a blob whose name disagrees with its content."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        scratch = self.root / f".in-{os.getpid()}-{id(self)}"
        digest = hashlib.sha256()
        with os.fdopen(fd, "rb") as src, open(scratch, "wb") as out:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        name = digest.hexdigest()
        final = self.path(name)
        if final.exists():
            scratch.unlink()
        else:
            final.parent.mkdir(exist_ok=True)
            scratch.chmod(0o444)
            os.replace(scratch, final)
        return name

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
