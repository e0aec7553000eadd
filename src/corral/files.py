"""The platform's own writes under a folder it was given, never through a link.

A sandboxed command can change what lies under the data folder while the platform works
(plant ``.corral`` as a link, swap a folder for a link between a check and a write, hard-link
a file from outside). So every platform write names a *root* it trusts (the data folder, a
source's root) and a path below it, and goes one component at a time from a descriptor on
that root: each folder opened with ``O_NOFOLLOW | O_DIRECTORY``, a missing one made with
``mkdirat``, a file written to an ``O_EXCL`` temp beside its target and renamed over it. A
link anywhere below the root refuses the write with :class:`~corral.errors.PolicyDenied`
(``rule: "link"``) naming the path, and nothing is left half-written.

A replaced file keeps its permission bits without setuid and setgid; a new entry made while
the platform runs as root takes the owner and group of the folder it is made in, so the
sandbox's user can go on working on what the platform wrote into its folders.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from corral.errors import PolicyDenied, ToolError

__all__ = [
    "append_file",
    "make_folders",
    "make_private_folder",
    "open_folder",
    "open_for_append",
    "write_file",
    "write_text_atomically",
]

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID
_NEW_FILE_MODE = 0o644


def _shown(root: Path, parts: tuple[str, ...]) -> str:
    return str(root.joinpath(*parts))


def _link_refused(root: Path, parts: tuple[str, ...]) -> PolicyDenied:
    where = _shown(root, parts)
    return PolicyDenied(
        f"{where!r} is a symbolic link, and the platform never writes through one; remove the "
        "link (or put a real folder or file in its place) and try again",
        data={"path": where, "rule": "link"},
    )


def _moved(root: Path, parts: tuple[str, ...]) -> PolicyDenied:
    where = _shown(root, parts)
    return PolicyDenied(
        f"{where!r} was moved away while the platform was writing into it; try again",
        data={"path": where, "rule": "moved"},
    )


def _not_a_folder(root: Path, parts: tuple[str, ...]) -> ToolError:
    where = _shown(root, parts)
    return ToolError(
        f"{where!r} is not a folder, so nothing can be written inside it; move it aside or "
        "choose another path",
        code="not_a_folder",
        data={"path": where},
    )


def _not_a_file(root: Path, parts: tuple[str, ...], kind: str) -> ToolError:
    where = _shown(root, parts)
    return ToolError(
        f"{where!r} is {kind}, not a regular file; the platform only replaces regular files, "
        "so remove it or choose another name",
        code="not_a_file",
        data={"path": where},
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a regular file"


def _parts(root: Path, path: Path) -> tuple[str, ...]:
    """``path`` as names below ``root``; ``..``, ``.`` and paths outside ``root`` refused."""
    if path.is_absolute():
        try:
            relative = PurePosixPath(path).relative_to(PurePosixPath(root))
        except ValueError:
            raise PolicyDenied(
                f"{str(path)!r} is not inside {str(root)!r}; the platform writes only below "
                "the folder it was given",
                data={"path": str(path), "rule": "outside_root"},
            ) from None
    else:
        relative = PurePosixPath(path)
    names = tuple(str(relative).split("/")) if str(relative) != "." else ()
    if any(name in ("", ".", "..") for name in names):
        raise PolicyDenied(
            f"{str(path)!r} has a '.' or '..' part; name the path without them",
            data={"path": str(path), "rule": "dot_part"},
        )
    return names


def _adopt_owner(fd: int, parent: os.stat_result) -> None:
    """Give what the platform just made the owner and group of its folder (root only)."""
    if os.geteuid() != 0:
        return
    made = os.fstat(fd)
    if (made.st_uid, made.st_gid) != (parent.st_uid, parent.st_gid):
        os.fchown(fd, parent.st_uid, parent.st_gid)


def _open_child_folder(
    parent: int, root: Path, parts: tuple[str, ...], *, create: bool, mode: int
) -> int:
    name = parts[-1]
    try:
        return os.open(name, _FOLDER, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                entry = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                raise _moved(root, parts) from None
            if stat.S_ISLNK(entry.st_mode):
                raise _link_refused(root, parts) from None
            raise _not_a_folder(root, parts) from None
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, mode, dir_fd=parent)
    # Opened again without following: what stands there now is judged, not what was made.
    try:
        child = _open_child_folder(parent, root, parts, create=False, mode=mode)
    except FileNotFoundError:
        raise _moved(root, parts) from None
    try:
        _adopt_owner(child, os.fstat(parent))
    except BaseException:
        os.close(child)
        raise
    return child


@contextlib.contextmanager
def _folder(root: Path, names: tuple[str, ...], *, create: bool, mode: int) -> Iterator[int]:
    """A descriptor on ``root/names…``, reached without following a link below ``root``."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth in range(len(names)):
            child = _open_child_folder(fd, root, names[: depth + 1], create=create, mode=mode)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_folder(root: Path, path: Path, *, mode: int = 0o755) -> Iterator[int]:
    """A descriptor on the folder ``path`` below ``root`` (made if missing), for ``*at``
    calls that must stay in it whatever its path leads to later."""
    with _folder(root, _parts(root, path), create=True, mode=mode) as fd:
        yield fd


def make_folders(root: Path, path: Path, *, mode: int = 0o755) -> None:
    """Make ``path`` and the folders above it below ``root``, refusing a link on the way."""
    with _folder(root, _parts(root, path), create=True, mode=mode):
        pass


def make_private_folder(root: Path, path: Path) -> None:
    """Make ``path`` below ``root`` a real folder only the platform's user may use (0700,
    owned by it even where the folder above belongs to someone else); links refused."""
    with _folder(root, _parts(root, path), create=True, mode=0o700) as fd:
        if os.geteuid() == 0:
            os.fchown(fd, os.geteuid(), os.getegid())
        os.fchmod(fd, 0o700)


def _existing(folder: int, root: Path, parts: tuple[str, ...]) -> os.stat_result | None:
    try:
        found = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(found.st_mode):
        raise _link_refused(root, parts)
    if not stat.S_ISREG(found.st_mode):
        raise _not_a_file(root, parts, _kind(found.st_mode))
    return found


def write_file(
    root: Path, path: Path, data: bytes, *, mode: int | None = None, folder_mode: int = 0o755
) -> os.stat_result:
    """Replace ``path`` (below ``root``) with ``data`` atomically, never through a link.

    ``mode`` is the new file's permission bits; None keeps those of the file it replaces
    (without setuid and setgid) or gives a new file 0644 less the umask. The old file is
    replaced by a rename, never truncated, so a hard link to it elsewhere keeps its content.
    Returns the written file's status (its path may have changed hands since).
    """
    parts = _parts(root, path)
    if not parts:
        raise _not_a_file(root, parts, "the root folder")
    with _folder(root, parts[:-1], create=True, mode=folder_mode) as folder:
        before = _existing(folder, root, parts)
        temp = f".{parts[-1][:200]}.{secrets.token_hex(4)}.tmp"
        # Never more open while being written than the file will be when done.
        initial = mode if mode is not None else 0o600 if before is not None else _NEW_FILE_MODE
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            stat.S_IMODE(initial) & ~_PRIVILEGE_BITS,
            dir_fd=folder,
        )
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                _adopt_owner(out.fileno(), os.fstat(folder))
                if mode is not None:
                    os.fchmod(out.fileno(), stat.S_IMODE(mode) & ~_PRIVILEGE_BITS)
                elif before is not None:
                    os.fchmod(out.fileno(), stat.S_IMODE(before.st_mode) & ~_PRIVILEGE_BITS)
                os.fsync(out.fileno())
                written = os.fstat(out.fileno())
            # Checked again right before the rename: a link or pipe put there meanwhile is
            # refused (a rename would replace a link, not follow it, but say so all the same).
            _existing(folder, root, parts)
            os.rename(temp, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=folder)
            raise
    return written


def write_text_atomically(root: Path, path: Path, text: str, *, mode: int = 0o600) -> None:
    """Write ``text`` to ``path`` below ``root`` as one rename (private to the platform's
    user by default)."""
    write_file(root, path, text.encode("utf-8"), mode=mode)


def open_for_append(
    root: Path, path: Path, *, mode: int = 0o644, folder_mode: int = 0o755
) -> BinaryIO:
    """An unbuffered handle appending to ``path`` below ``root``, created if missing.

    Refused when the file is a link, not a regular file (a pipe must not block the platform)
    or has another name elsewhere (appending to a hard link would change a file outside).
    """
    parts = _parts(root, path)
    if not parts:
        raise _not_a_file(root, parts, "the root folder")
    with _folder(root, parts[:-1], create=True, mode=folder_mode) as folder:
        _existing(folder, root, parts)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(parts[-1], flags | os.O_CLOEXEC, mode, dir_fd=folder)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise _link_refused(root, parts) from None
            if err.errno == errno.ENXIO:  # a pipe nobody reads, swapped in after the check
                raise _not_a_file(root, parts, "a named pipe") from None
            raise
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode):
                raise _not_a_file(root, parts, _kind(found.st_mode))
            if found.st_nlink != 1:
                raise _not_a_file(root, parts, "a file with another name (a hard link)")
            _adopt_owner(fd, os.fstat(folder))
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
    return os.fdopen(fd, "ab", buffering=0)


def append_file(root: Path, path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Add ``data`` at the end of ``path`` below ``root`` (see :func:`open_for_append`)."""
    with open_for_append(root, path, mode=mode) as out:
        out.write(data)
