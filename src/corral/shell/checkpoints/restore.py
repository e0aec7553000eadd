"""Putting paths back as a run of checkpoints found them, never through a link."""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from corral.files import open_folder
from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import Checkpoint, Prior

_AS_ROOT = os.geteuid() == 0
"""Only root can give a path back to its owner; anyone else restores as itself."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _depth(path: str) -> int:
    return path.count("/")


@contextlib.contextmanager
def _writable(fd: int) -> Iterator[None]:
    """The folder open on ``fd`` writable by its owner while a name in it is changed."""
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & 0o700 == 0o700:
        yield
        return
    os.fchmod(fd, mode | 0o700)
    try:
        yield
    finally:
        os.fchmod(fd, mode)


def _in_parent(root: Path, path: str, action: Callable[[int, str], None]) -> None:
    parent, _, name = path.rpartition("/")
    with open_folder(root, Path(parent or "."), mode=0o700) as fd, _writable(fd):
        action(fd, name)


def _remove(fd: int, name: str) -> None:
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=fd)
        return
    child = os.open(name, _DIR, dir_fd=fd)
    try:
        os.fchmod(child, 0o700)
        for inner in os.listdir(child):
            _remove(child, inner)
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=fd)


def _make_folder(fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            _remove(fd, name)
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=fd)
    _set_folder_mode(fd, name, 0o700, keep=True)


def _under_any(path: str, folders: set[str]) -> bool:
    """Whether a folder above ``path`` is in ``folders`` (its removal takes ``path`` too)."""
    parts = path.split("/")
    return any("/".join(parts[:depth]) in folders for depth in range(1, len(parts)))


def _set_folder_mode(
    fd: int, name: str, mode: int, *, keep: bool = False, owner: tuple[int, int] | None = None
) -> None:
    child = os.open(name, _DIR, dir_fd=fd)
    try:
        now = stat.S_IMODE(os.fstat(child).st_mode)
        if owner is not None and _AS_ROOT:
            os.fchown(child, *owner)
        os.fchmod(child, now | mode if keep else mode)
    finally:
        os.close(child)


def _put(blobs: BlobStore, prior: Prior) -> Callable[[int, str], None]:
    def put(fd: int, name: str) -> None:
        _remove(fd, name)
        if prior.kind == "link":
            os.symlink(prior.target, name, dir_fd=fd)
            if _AS_ROOT:
                os.chown(name, prior.uid, prior.gid, dir_fd=fd, follow_symlinks=False)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, 0o600, dir_fd=fd)
        try:
            blobs.copy_out(prior.digest, out)
            if _AS_ROOT:
                os.fchown(out, prior.uid, prior.gid)
            os.fchmod(out, prior.mode)
            os.utime(out, ns=(prior.mtime_ns, prior.mtime_ns))
        finally:
            os.close(out)

    return put


def restore(root: Path, blobs: BlobStore, checkpoints: Sequence[Checkpoint]) -> list[str]:
    """Put every path the ``checkpoints`` (oldest first) touched back as it was before the
    first of them: content, mode, link target, or absence. Returns the paths that could
    not be given back (a file that was unreadable when the snapshot was taken)."""
    wanted: dict[str, Prior | None] = {}
    for checkpoint in checkpoints:
        for path, prior in checkpoint.priors.items():
            wanted.setdefault(path, prior)
    created = {path for path, prior in wanted.items() if prior is None}
    for path in sorted(created, key=_depth):
        if not _under_any(path, created):
            _in_parent(root, path, _remove)
    folders = sorted(
        (path for path, prior in wanted.items() if prior and prior.kind == "dir"), key=_depth
    )
    for path in folders:
        _in_parent(root, path, _make_folder)
    lost: list[str] = []
    for path, prior in sorted(wanted.items()):
        if prior is None or prior.kind == "dir":
            continue
        if prior.kind == "file" and not prior.digest:
            lost.append(path)
            continue
        _in_parent(root, path, _put(blobs, prior))
    for path in reversed(folders):
        prior = wanted[path]
        assert prior is not None
        _in_parent(
            root,
            path,
            functools.partial(_set_folder_mode, mode=prior.mode, owner=(prior.uid, prior.gid)),
        )
    return lost
