"""The Landlock tier's launcher: the first process of a call's own PID and mount namespace.

As root the Landlock tier needs no user namespace to give a call namespaces of its own:
util-linux ``unshare --pid --fork --kill-child --mount-proc`` makes them and starts this
script as the namespace's first process, with a ``/proc`` that shows only the call's
processes. Still root, it masks the platform's protected paths inside the call's mount
namespace (an empty read-only tmpfs over a folder, an unreadable empty file over a file),
then becomes the sandbox uid, applies the Landlock rules and the seccomp filter, and execs
the command, which so becomes the namespace's init: when it ends, every process the call
started ends with it, whatever session or process group it moved to.

Run as ``python -I -S landlock_launch.py PAYLOAD -- ARGV...``. It imports only the standard
library and runs its sibling :mod:`corral.shell.restrict_self` by file, not through the
``corral`` package, so the start costs a few milliseconds. ``PAYLOAD`` is a file
:class:`LaunchPayload` wrote; read and deleted here. Any failure exits with status 126 and
says why on stderr: the command never runs without its confinement.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
import sys
from collections.abc import Callable

__all__ = ["LAUNCHER", "LaunchPayload", "main"]

LAUNCHER = os.path.realpath(__file__)
FAILED = 126

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND = 32, 4096
_SEALED = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_SIGKILL = 9


class LaunchPayload:
    """What the launcher needs, written by the platform to a root-only file.

    One file of NUL-separated fields (no JSON: the launcher's start is on every call's path,
    and a path may hold any byte but NUL): cwd, uid, mask file, the ruleset attribute, the
    handled rights, the seccomp program, whether to stay as a reaper, the number of masks,
    the connect ports (comma-separated), the number of masks, the masks, then path and
    access of each rule. ``uid`` -1 keeps the caller's uid.
    """

    __slots__ = (
        "attr", "cwd", "handled", "mask_file", "masks", "ports", "reaper", "rules", "seccomp",
        "uid",
    )  # fmt: skip

    def __init__(
        self,
        *,
        cwd: str,
        uid: int,
        masks: tuple[str, ...],
        mask_file: str,
        attr: bytes,
        handled: int,
        rules: tuple[tuple[str, int], ...],
        seccomp: bytes,
        reaper: bool = False,
        ports: tuple[int, ...] = (),
    ) -> None:
        self.cwd, self.uid, self.masks, self.mask_file = cwd, uid, masks, mask_file
        self.attr, self.handled, self.rules, self.seccomp = attr, handled, rules, seccomp
        self.reaper, self.ports = reaper, ports

    def write(self, path: str) -> None:
        fields = [self.cwd, str(self.uid), self.mask_file, self.attr.hex(), str(self.handled)]
        fields += [self.seccomp.hex(), "1" if self.reaper else "0"]
        fields += [",".join(str(p) for p in self.ports), str(len(self.masks))]
        fields += self.masks
        for rule_path, access in self.rules:
            fields += [rule_path, str(access)]
        if any("\0" in field for field in fields):
            raise ValueError("a path holds a NUL byte")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write("\0".join(fields).encode("utf-8", "surrogateescape"))

    @classmethod
    def read(cls, path: str) -> LaunchPayload:
        with open(path, "rb") as handle:
            fields = handle.read().decode("utf-8", "surrogateescape").split("\0")
        count = int(fields[8])
        masks, rest = fields[9 : 9 + count], fields[9 + count :]
        return cls(
            cwd=fields[0],
            uid=int(fields[1]),
            mask_file=fields[2],
            attr=bytes.fromhex(fields[3]),
            handled=int(fields[4]),
            seccomp=bytes.fromhex(fields[5]),
            reaper=fields[6] == "1",
            ports=tuple(int(p) for p in fields[7].split(",") if p),
            masks=tuple(masks),
            rules=tuple((rest[i], int(rest[i + 1])) for i in range(0, len(rest), 2)),
        )


def _restrict_self() -> dict[str, Callable[..., None]]:
    """The names of ``restrict_self.py``, run from its file (no package, no import machinery)."""
    path = os.path.join(os.path.dirname(LAUNCHER), "restrict_self.py")
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec")
    names: dict[str, object] = {"__name__": "_corral_restrict_self", "__file__": path}
    exec(code, names)  # our own file, next to this one
    return {name: value for name, value in names.items() if callable(value)}


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mask(libc: ctypes.CDLL, path: str, mask_file: str) -> None:
    """Hide ``path`` inside this mount namespace: nothing readable, nothing writable."""
    info = os.lstat(path)  # raises when it vanished since the plan: refuse, do not guess
    if stat.S_ISLNK(info.st_mode):
        raise OSError(f"protected path {path!r} became a symbolic link; refusing to run")
    target = path.encode()
    if stat.S_ISDIR(info.st_mode):
        _check(libc.mount(b"tmpfs", target, b"tmpfs", _SEALED, b"mode=000,size=4k"), path)
        return
    _check(libc.mount(mask_file.encode(), target, None, _MS_BIND, None), path)
    _check(libc.mount(None, target, None, _MS_BIND | _MS_REMOUNT | _SEALED, None), path)


def _original_environment() -> dict[str, str]:
    """The environment this process was started with (Python may have added ``LC_CTYPE``)."""
    with open("/proc/self/environ", "rb") as handle:
        raw = handle.read()
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(): value.decode("utf-8", "surrogateescape") for key, value in pairs}


def launch(payload: LaunchPayload, argv: list[str]) -> int:
    """Mask, drop to the sandbox uid, confine, exec ``argv``; returns only as a reaper."""
    libc = ctypes.CDLL(None, use_errno=True)
    environment = _original_environment()
    # Loaded while still root: the sandbox uid may not read the interpreter's library.
    restrict = _restrict_self()
    for path in payload.masks:
        mask(libc, path, payload.mask_file)
    os.chdir(payload.cwd)  # resolved again inside the masked namespace
    if payload.uid >= 0:
        restrict["drop_to"](payload.uid)
    # A uid change clears the parent-death signal (unshare --kill-child's, or the
    # runner's): set it again.
    _check(libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    restrict["restrict_landlock"](payload.attr, list(payload.rules), payload.handled, payload.ports)
    restrict["install_filter"](payload.seccomp)
    if payload.reaper:
        return reap(libc, argv, environment)
    os.execve(argv[0], argv, environment)
    return FAILED  # pragma: no cover - execve returns only by raising


def reap(libc: ctypes.CDLL, argv: list[str], environment: dict[str, str]) -> int:
    """Without namespaces: stay as the command's parent and a child subreaper, so whatever
    it starts stays our descendant (a double fork + ``setsid`` included) while the runner
    signals them all; when the command ends, kill what is left and report its status."""
    _check(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    # TERM and INT are for the command (the runner signals the whole group): the reaper
    # outlives it to clean up, and dies only by SIGKILL or with its parent.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    command = os.fork()
    if command == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            os.execve(argv[0], argv, environment)
        finally:
            os._exit(FAILED)
    status = 0
    while True:
        pid, code = os.waitpid(-1, 0)
        if pid == command:
            status = code
            break
    _kill_descendants()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _kill_descendants() -> None:
    """SIGKILL every process below this one and reap it, until none is left (one forking
    while we look is found on the next pass)."""
    me = os.getpid()
    while True:
        parents: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as handle:
                        raw = handle.read()
                    parents[int(name)] = int(raw[raw.rindex(b")") + 2 :].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        below = {me}
        grown = True
        while grown:
            more = {pid for pid, parent in parents.items() if parent in below} - below
            below |= more
            grown = bool(more)
        below.discard(me)
        for pid in below:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, 0):
                pass
        except ChildProcessError:
            if not below:
                return


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--":
        print("usage: landlock_launch.py PAYLOAD -- ARGV...", file=sys.stderr)
        return FAILED
    try:
        payload = LaunchPayload.read(args[1])
        os.unlink(args[1])
        return launch(payload, args[3:])
    except Exception as exc:  # whatever failed, the command must not run unconfined
        print(f"corral: the Landlock sandbox could not be applied ({exc})", file=sys.stderr)
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
