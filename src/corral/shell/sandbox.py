"""The bubblewrap tier: the layout of one sandbox, as bubblewrap arguments.

What a sandboxed command sees:

- the system toolchain read-only (``/usr``, the ``/bin`` and ``/lib*`` links or folders);
- ``/etc`` as one read-only bind of a folder prepared in the platform's private area
  (:class:`SandboxFiles`): copies of the few host files programs need (loader cache,
  alternatives, certificates, time zone...) beside small synthetic ``passwd``, ``group``,
  ``hosts`` and ``nsswitch.conf``, so the host's accounts and name are not visible;
  ``resolv.conf`` is bound on top only when the network is on;
- every local source the caller holds a right on, at its real path: read-write where the
  caller may write, read-only otherwise; sources the caller cannot use are absent;
- a private ``/tmp`` and ``/var/tmp`` (HOME is ``/tmp/home``), a fresh ``/proc`` for its own
  PID namespace, a ``/dev`` of six device nodes (no ``/dev/pts``: commands have no terminal);
- nothing of the platform's data folder except the sources inside it (the drive): when a
  bound source covers the data folder it is hidden under an empty read-only tmpfs, and the
  database, keys and settings files are masked wherever a source would expose them.

The process gets new user, PID, IPC, UTS, cgroup and (unless policy grants the network)
network namespaces, runs as an unprivileged uid inside its user namespace, with no
capabilities, ``no_new_privs``, the seccomp filter of :mod:`corral.shell.seccomp`, and dies
with its parent. Mounts are ordered by depth so a deeper bind is never hidden by a shallower
one, and masks come after what they mask.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from corral.shell.real_paths import RealPaths
from corral.shell.system_etc import HOSTNAME, SYNTHETIC_ETC, prepare_etc, system_files

__all__ = [
    "SANDBOX_HOME",
    "SCRATCH_ROOTS",
    "SYNTHETIC_ETC",
    "BoundSource",
    "Mount",
    "SandboxFiles",
    "bwrap_argv",
    "plan_mounts",
    "system_files",
]

SANDBOX_HOME = "/tmp/home"
SCRATCH_ROOTS = ("/tmp", "/var/tmp")
"""Private, empty at start, gone at exit: inside the sandbox these belong to no source."""

TOOLCHAIN = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = (
    ("/proc/self/fd", "/dev/fd"),
    ("/proc/self/fd/0", "/dev/stdin"),
    ("/proc/self/fd/1", "/dev/stdout"),
    ("/proc/self/fd/2", "/dev/stderr"),
)
MountKind = Literal[
    "ro", "rw", "tmpfs", "dir", "symlink", "mask_file", "proc", "dev_bind", "remount_ro"
]


@dataclass(frozen=True, slots=True)
class Mount:
    kind: MountKind
    dest: str
    src: str | None = None
    order: int = 1
    """Among mounts of equal depth: 0 system, 1 sources, 2 masks; remounts go last."""

    def args(self) -> list[str]:
        if self.kind == "ro":
            return ["--ro-bind-try", str(self.src), self.dest]
        if self.kind == "rw":
            return ["--bind-try", str(self.src), self.dest]
        if self.kind == "tmpfs":
            return ["--tmpfs", self.dest]
        if self.kind == "dir":
            return ["--dir", self.dest]
        if self.kind == "symlink":
            return ["--symlink", str(self.src), self.dest]
        if self.kind == "mask_file":
            return ["--ro-bind", "/dev/null", self.dest]
        if self.kind == "proc":
            return ["--proc", self.dest]
        if self.kind == "dev_bind":
            return ["--dev-bind", str(self.src), self.dest]
        return ["--remount-ro", self.dest]

    @property
    def depth(self) -> int:
        return 0 if self.dest == "/" else self.dest.count("/")


@dataclass(frozen=True, slots=True)
class BoundSource:
    """A source the command may see: its real root and whether it may write there."""

    name: str
    root: str
    writable: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxFiles:
    """The sandbox's ``/etc`` folder, prepared in the platform's private area."""

    etc: str
    uid: int
    gid: int

    @classmethod
    def write(cls, folder: Path, *, uid: int | None = None, gid: int | None = None) -> SandboxFiles:
        """Prepare (or refresh) ``folder/etc`` for a sandbox user ``uid``:``gid``.

        ``uid`` defaults to the platform's own (the host broker keeps its operator's).
        """
        uid = os.getuid() if uid is None else uid
        gid = uid if gid is None else gid
        etc = prepare_etc(folder, uid=uid, gid=gid)
        return cls(etc=str(etc), uid=uid, gid=gid)


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _system_mounts(files: SandboxFiles, *, network: bool) -> list[Mount]:
    mounts: list[Mount] = []
    for top in TOOLCHAIN:
        if os.path.islink(top):
            mounts.append(Mount("symlink", top, os.readlink(top), order=0))
        elif os.path.isdir(top):
            mounts.append(Mount("ro", top, top, order=0))
    mounts.append(Mount("ro", "/etc", files.etc, order=0))
    if network and os.path.lexists("/etc/resolv.conf"):
        mounts.append(Mount("ro", "/etc/resolv.conf", "/etc/resolv.conf", order=0))
    mounts += [
        Mount("proc", "/proc", order=0),
        Mount("tmpfs", "/dev", order=0),
        *(Mount("dev_bind", f"/dev/{name}", f"/dev/{name}", order=0) for name in _DEVICES),
        *(Mount("symlink", link, target, order=0) for target, link in _DEV_LINKS),
        Mount("dir", "/dev/shm", order=0),
        *(Mount("tmpfs", root, order=0) for root in SCRATCH_ROOTS),
        Mount("dir", SANDBOX_HOME, order=0),
    ]
    return mounts


def plan_mounts(
    files: SandboxFiles,
    sources: Iterable[BoundSource],
    *,
    data_dir: str,
    protected: Sequence[str],
    network: bool,
) -> list[Mount]:
    """Every mount of one sandbox, in the order bubblewrap must apply them."""
    mounts = _system_mounts(files, network=network)
    toolchain = [m.dest for m in mounts if m.kind == "ro" and m.dest in TOOLCHAIN]
    bound: list[BoundSource] = []
    for source in sources:
        if os.path.isdir(source.root) or os.path.isfile(source.root):
            bound.append(source)
            if not source.writable and any(_within(source.root, t) for t in toolchain):
                continue  # already visible read-only as part of the toolchain
            mounts.append(Mount("rw" if source.writable else "ro", source.root, source.root))
    real = RealPaths()  # the protected paths share a few folders: each resolved once
    data_real = real(data_dir)
    remounts: list[Mount] = []
    hidden = any(_within(data_real, s.root) for s in bound)
    if hidden:
        mounts.append(Mount("tmpfs", data_real, order=2))
        remounts.append(Mount("remount_ro", data_real, order=3))
    # Under a hidden data folder only sources bound inside it can expose a protected file.
    exposing = [s for s in bound if not hidden or _within(s.root, data_real)]
    for raw in protected:
        path = real(raw)
        if not real.lexists(path) or not any(_within(path, s.root) for s in exposing):
            continue
        if real.isdir(path):
            mounts.append(Mount("tmpfs", path, order=2))
            remounts.append(Mount("remount_ro", path, order=3))
        else:
            mounts.append(Mount("mask_file", path, order=2))
    mounts.sort(key=lambda m: (m.depth, m.order))
    return mounts + remounts


def bwrap_argv(
    binary: str,
    mounts: Sequence[Mount],
    *,
    network: bool,
    cwd: str,
    argv: Sequence[str],
    uid: int | None = None,
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` in ``cwd`` inside ``mounts``.

    With ``uid`` the command runs as that uid (and gid) in a user namespace of its own; the
    seccomp program is added by the spawner, which owns the descriptor it travels on.
    """
    out = [binary, "--unshare-all"]
    if network:
        out.append("--share-net")
    if uid is not None:
        out += ["--unshare-user", "--uid", str(uid), "--gid", str(uid)]
    out += ["--die-with-parent", "--cap-drop", "ALL", "--hostname", HOSTNAME]
    for mount in mounts:
        out += mount.args()
    out += ["--chdir", cwd, "--", *argv]
    return out
