"""The kernel boundary: a bubblewrap layout per command, and start-up detection.

What a sandboxed command sees:

- the system toolchain read-only (``/usr``, the ``/bin`` and ``/lib*`` links or folders, and
  the few ``/etc`` files programs need: loader cache, alternatives, certificates, time
  zone); ``/etc/passwd``, ``/etc/group``, ``/etc/hosts`` and ``/etc/nsswitch.conf`` are
  small synthetic files, so the host's accounts and name are not visible;
- every local source the caller holds a right on, at its real path: read-write where the
  caller may write, read-only otherwise; sources the caller cannot use are absent;
- a private ``/tmp`` and ``/var/tmp`` (HOME is ``/tmp/home``), a fresh ``/proc`` for its own
  PID namespace, a minimal ``/dev``;
- nothing of the platform's data folder except the sources inside it (the drive): when a
  bound source covers the data folder it is hidden under an empty read-only tmpfs, and the
  database, keys and settings files are masked wherever a source would expose them.

The process gets new user, PID, IPC, UTS, cgroup and (unless policy grants the network)
network namespaces, no capabilities, ``no_new_privs`` (bubblewrap always sets it), and dies
with its parent. Mounts are ordered by depth so a deeper bind is never hidden by a
shallower one, and masks come after what they mask.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "SANDBOX_HOME",
    "SCRATCH_ROOTS",
    "BoundSource",
    "Confinement",
    "Mount",
    "SandboxFiles",
    "SandboxStatus",
    "bwrap_argv",
    "detect_sandbox",
    "plan_mounts",
    "system_files",
]

Confinement = Literal["bubblewrap", "unconfined"]

SANDBOX_HOME = "/tmp/home"
SCRATCH_ROOTS = ("/tmp", "/var/tmp")
"""Private, empty at start, gone at exit: inside the sandbox these belong to no source."""

HOSTNAME = "corral-sandbox"
_TOOLCHAIN = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "mime.types",
    "magic",
    "magic.mime",
    "locale.alias",
    "locale.conf",
    "protocols",
    "services",
    "gai.conf",
    "host.conf",
    "debian_version",
    "os-release",
    "perl",
    "python3*",
    "java-*",
)
_NETWORK_ETC = ("resolv.conf",)

MountKind = Literal["ro", "rw", "tmpfs", "dir", "symlink", "mask_file", "proc", "dev", "remount_ro"]


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
        if self.kind == "dev":
            return ["--dev", self.dest]
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
    """Synthetic ``/etc`` files, written once into the platform's private folder."""

    passwd: str
    group: str
    hosts: str
    nsswitch: str

    @classmethod
    def write(cls, folder: Path, *, user: str = "corral") -> SandboxFiles:
        folder.mkdir(parents=True, exist_ok=True)
        uid, gid = os.getuid(), os.getgid()
        contents = {
            "passwd": f"{user}:x:{uid}:{gid}:{user}:{SANDBOX_HOME}:/bin/bash\n"
            + ("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"),
            "group": f"{user}:x:{gid}:\nnogroup:x:65534:\n",
            "hosts": f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost\n",
            "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
        }
        for name, text in contents.items():
            path = folder / name
            if not path.is_file() or path.read_text() != text:
                path.write_text(text)
            path.chmod(0o644)
        return cls(
            passwd=str(folder / "passwd"),
            group=str(folder / "group"),
            hosts=str(folder / "hosts"),
            nsswitch=str(folder / "nsswitch.conf"),
        )


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


SYNTHETIC_ETC = ("/etc/passwd", "/etc/group", "/etc/hosts", "/etc/nsswitch.conf")


def system_files(*, network: bool = False) -> tuple[str, ...]:
    """The ``/etc`` entries a sandboxed command sees (read-only)."""
    names = [*_ETC, *(_NETWORK_ETC if network else ())]
    found: list[str] = []
    for name in names:
        for path in sorted(glob.glob(f"/etc/{name}")) if "*" in name else [f"/etc/{name}"]:
            if os.path.lexists(path):
                found.append(path)
    return (*found, *SYNTHETIC_ETC)


def _system_mounts(files: SandboxFiles, *, network: bool) -> list[Mount]:
    mounts: list[Mount] = []
    for top in _TOOLCHAIN:
        if os.path.islink(top):
            mounts.append(Mount("symlink", top, os.readlink(top), order=0))
        elif os.path.isdir(top):
            mounts.append(Mount("ro", top, top, order=0))
    for found in system_files(network=network)[: -len(SYNTHETIC_ETC)]:
        mounts.append(Mount("ro", found, found, order=0))
    mounts += [
        Mount("ro", "/etc/passwd", files.passwd, order=0),
        Mount("ro", "/etc/group", files.group, order=0),
        Mount("ro", "/etc/hosts", files.hosts, order=0),
        Mount("ro", "/etc/nsswitch.conf", files.nsswitch, order=0),
        Mount("proc", "/proc", order=0),
        Mount("dev", "/dev", order=0),
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
    toolchain = [m.dest for m in mounts if m.kind == "ro" and m.dest in _TOOLCHAIN]
    bound: list[BoundSource] = []
    for source in sources:
        if os.path.isdir(source.root) or os.path.isfile(source.root):
            bound.append(source)
            if not source.writable and any(_within(source.root, t) for t in toolchain):
                continue  # already visible read-only as part of the toolchain
            mounts.append(Mount("rw" if source.writable else "ro", source.root, source.root))
    data_real = os.path.realpath(data_dir)
    remounts: list[Mount] = []
    hidden = any(_within(data_real, s.root) for s in bound)
    if hidden:
        mounts.append(Mount("tmpfs", data_real, order=2))
        remounts.append(Mount("remount_ro", data_real, order=3))
    # Under a hidden data folder only sources bound inside it can expose a protected file.
    exposing = [s for s in bound if not hidden or _within(s.root, data_real)]
    for raw in protected:
        path = os.path.realpath(raw)
        if not os.path.lexists(path) or not any(_within(path, s.root) for s in exposing):
            continue
        if os.path.isdir(path):
            mounts.append(Mount("tmpfs", path, order=2))
            remounts.append(Mount("remount_ro", path, order=3))
        else:
            mounts.append(Mount("mask_file", path, order=2))
    mounts.sort(key=lambda m: (m.depth, m.order))
    return mounts + remounts


def bwrap_argv(
    binary: str, mounts: Sequence[Mount], *, network: bool, cwd: str, argv: Sequence[str]
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` in ``cwd`` inside ``mounts``."""
    out = [binary, "--unshare-all"]
    if network:
        out.append("--share-net")
    out += ["--die-with-parent", "--cap-drop", "ALL", "--hostname", HOSTNAME]
    for mount in mounts:
        out += mount.args()
    out += ["--chdir", cwd, "--", *argv]
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxStatus:
    """What start-up found: the configured mode and whether bubblewrap works here."""

    mode: Confinement
    available: bool
    binary: str | None
    reason: str

    @property
    def usable(self) -> bool:
        """Commands may run: bubblewrap works, or the operator chose unconfined."""
        return self.mode == "unconfined" or self.available

    def refusal(self) -> str:
        return (
            f"shell commands cannot run: the bubblewrap sandbox does not work here "
            f"({self.reason}). An operator must install bubblewrap (Debian package "
            "'bubblewrap') or explicitly set sandbox = \"unconfined\" in the settings."
        )

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "available": self.available,
            "binary": self.binary,
            "reason": self.reason,
        }


async def detect_sandbox(
    mode: Confinement, binary: str, files: SandboxFiles, *, within: float = 10.0
) -> SandboxStatus:
    """Run ``true`` in a minimal sandbox with the flags commands use; report what happened."""
    found = shutil.which(binary)
    if found is None:
        return SandboxStatus(
            mode=mode, available=False, binary=None, reason=f"no bubblewrap binary {binary!r}"
        )
    mounts = plan_mounts(files, (), data_dir="/nonexistent", protected=(), network=False)
    argv = bwrap_argv(found, mounts, network=False, cwd="/", argv=["/bin/sh", "-c", "true"])
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin"},
        )
        _, err = await asyncio.wait_for(process.communicate(), within)
    except (OSError, TimeoutError) as exc:
        return SandboxStatus(
            mode=mode, available=False, binary=found, reason=f"{type(exc).__name__}: {exc}"
        )
    if process.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1] if lines else f"exit status {process.returncode}"
        return SandboxStatus(mode=mode, available=False, binary=found, reason=reason)
    return SandboxStatus(mode=mode, available=True, binary=found, reason="bubblewrap works")
