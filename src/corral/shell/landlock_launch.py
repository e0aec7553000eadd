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
library and its two siblings (loaded by file, not through the ``corral`` package, so the
start costs a few milliseconds). ``PAYLOAD`` is a JSON file :class:`LaunchPayload` wrote;
read and deleted here. Any failure exits with status 126 and says why on stderr: the command
never runs without its confinement.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["LAUNCHER", "LaunchPayload", "main"]

LAUNCHER = str(Path(__file__).resolve())
FAILED = 126

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND = 32, 4096
_SEALED = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchPayload:
    """What the launcher needs, written by the platform to a root-only file."""

    cwd: str
    uid: int
    masks: tuple[str, ...]
    mask_file: str
    abi: int
    rules: tuple[tuple[str, int], ...]
    network: bool
    seccomp: bytes

    def write(self, path: str) -> None:
        body = {
            "cwd": self.cwd,
            "uid": self.uid,
            "masks": list(self.masks),
            "mask_file": self.mask_file,
            "abi": self.abi,
            "rules": [list(rule) for rule in self.rules],
            "network": self.network,
            "seccomp": self.seccomp.hex(),
        }
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(body, handle)

    @classmethod
    def read(cls, path: str) -> LaunchPayload:
        with open(path) as handle:
            body: dict[str, Any] = json.load(handle)
        return cls(
            cwd=body["cwd"],
            uid=int(body["uid"]),
            masks=tuple(body["masks"]),
            mask_file=body["mask_file"],
            abi=int(body["abi"]),
            rules=tuple((str(p), int(a)) for p, a in body["rules"]),
            network=bool(body["network"]),
            seccomp=bytes.fromhex(body["seccomp"]),
        )


def _sibling(name: str) -> ModuleType:
    """Load ``corral/shell/<name>.py`` without importing the ``corral`` package."""
    spec = importlib.util.spec_from_file_location(
        f"_corral_launch_{name}", Path(LAUNCHER).parent / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


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


def launch(payload: LaunchPayload, argv: list[str]) -> None:
    """Mask, drop to the sandbox uid, confine, exec ``argv``; returns only by raising."""
    libc = ctypes.CDLL(None, use_errno=True)
    environment = _original_environment()
    # Loaded while still root: the sandbox uid may not read the interpreter's library.
    landlock, seccomp = _sibling("landlock"), _sibling("seccomp")
    for path in payload.masks:
        mask(libc, path, payload.mask_file)
    os.chdir(payload.cwd)  # resolved again inside the masked namespace
    os.setgroups([])
    os.setresgid(payload.uid, payload.uid, payload.uid)
    os.setresuid(payload.uid, payload.uid, payload.uid)
    # A uid change clears the parent-death signal unshare --kill-child set: set it again.
    _check(libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    rules = tuple(landlock.Rule(path, access) for path, access in payload.rules)
    plan = landlock.LandlockPlan(abi=payload.abi, rules=rules, network=payload.network)
    plan.apply()
    seccomp.SeccompLoader(payload.seccomp).load()
    os.execve(argv[0], argv, environment)


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--":
        print("usage: landlock_launch.py PAYLOAD -- ARGV...", file=sys.stderr)
        return FAILED
    try:
        payload = LaunchPayload.read(args[1])
        os.unlink(args[1])
        launch(payload, args[3:])
    except Exception as exc:  # whatever failed, the command must not run unconfined
        print(f"corral: the Landlock sandbox could not be applied ({exc})", file=sys.stderr)
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
