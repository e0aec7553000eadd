"""Landlock: filesystem rules a command cannot leave, for machines without user namespaces.

A :class:`LandlockPlan` is computed in the platform (which paths, which rights) and applied
in the child between fork and exec (:meth:`LandlockPlan.apply`): create a ruleset handling
every right the kernel's ABI knows, add one rule per path, set ``no_new_privs`` and restrict
the process. What is not granted is denied, whatever the spelling that reaches it: rules hold
on inodes, so ``../``, ``/proc/self/root/...`` and symlinks all end at the same check.

What is granted: the toolchain (``/usr``, the ``/bin`` and ``/lib*`` entries, the ``/etc``
files programs need) and ``/proc`` to read and run; a few device nodes; the command's private
home read-write; each source the caller may use, read-only or read-write. The platform's data
folder and protected files are carved out of any source that covers them: the covering
directory then gets no rule of its own, each of its other children gets the source's rights,
and the way down to the protected path is walked the same way.

From ABI 4 TCP ``bind``/``connect`` are handled too (all refused unless the network is on,
but for a connect to ``connect_ports``: the egress proxy's, in network mode proxy; Landlock
rules name a port only, so a connect to that port on any address passes);
from ABI 6 the process may not signal, nor reach the abstract UNIX sockets of, processes
outside its domain.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from corral.shell.restrict_self import landlock_abi, no_new_privs, restrict_landlock

__all__ = [
    "DEVICES",
    "LandlockPlan",
    "Rule",
    "landlock_abi",
    "maskable",
    "no_new_privs",
    "plan_landlock",
]

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_LATEST = (1 << 16) - 1
READ = EXECUTE | READ_FILE | READ_DIR
_NET_TCP = 0b11  # BIND_TCP | CONNECT_TCP
_SCOPES = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
_DEVICE_RIGHTS = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV


def _handled_fs(abi: int) -> int:
    return _FS_BY_ABI.get(abi, _FS_LATEST)


@dataclass(frozen=True, slots=True)
class Rule:
    """``access`` (Landlock bits) on ``path`` and everything beneath it."""

    path: str
    access: int


def _within(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _carve(root: str, access: int, forbidden: Sequence[str], out: list[Rule]) -> None:
    """Grant ``access`` on ``root`` minus every ``forbidden`` path beneath it."""
    inside = [f for f in forbidden if _within(f, root)]
    if not inside:
        out.append(Rule(root, access))
        return
    if root in inside or not os.path.isdir(root) or os.path.islink(root):
        return
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue  # its target is judged by the rules of wherever it leads
        _carve(entry.path, access, inside, out)


@dataclass(frozen=True, slots=True, kw_only=True)
class LandlockPlan:
    """The rules of one command and the kernel features to use; applied in the child."""

    abi: int
    rules: tuple[Rule, ...]
    network: bool
    scopes: bool = field(default=True)
    connect_ports: tuple[int, ...] = ()
    """TCP ports a connect may reach with the network off (ABI 4 and later)."""

    @property
    def handled_fs(self) -> int:
        return _handled_fs(self.abi)

    def ruleset_attr(self) -> bytes:
        """``struct landlock_ruleset_attr`` sized for this ABI."""
        fs = self.handled_fs
        if self.abi < 4:
            return struct.pack("<Q", fs)
        net = 0 if self.network else _NET_TCP
        if self.abi < 6:
            return struct.pack("<QQ", fs, net)
        return struct.pack("<QQQ", fs, net, _SCOPES if self.scopes else 0)

    def apply(self) -> None:  # pragma: no cover - runs in the child between fork and exec
        """Restrict the calling process for good; raises :class:`OSError` on any failure."""
        restrict_landlock(self.ruleset_attr(), self.pairs(), self.handled_fs, self.ports())

    def ports(self) -> tuple[int, ...]:
        """The connect ports the kernel can hold to (none before ABI 4, none with the
        network on: then nothing is refused)."""
        return () if self.abi < 4 or self.network else self.connect_ports

    def pairs(self) -> list[tuple[str, int]]:
        """The rules as ``(path, access)`` pairs, as the launcher receives them."""
        return [(rule.path, rule.access) for rule in self.rules]


def maskable(protected: Iterable[str]) -> list[str]:
    """The protected paths a mount can hide: those that exist and are no symbolic link.

    A missing one cannot be mounted over, so it stays carved out of the rules (a command
    must not create it either).
    """
    found = []
    for raw in protected:
        real = os.path.realpath(raw)
        if os.path.lexists(real) and not os.path.islink(real) and real not in found:
            found.append(real)
    return found


def plan_landlock(
    *,
    abi: int,
    toolchain: Iterable[str],
    home: str,
    sources: Iterable[tuple[str, bool]],
    data_dir: str,
    protected: Iterable[str],
    network: bool,
    masked: Iterable[str] = (),
    connect_ports: tuple[int, ...] = (),
) -> LandlockPlan:
    """The rules of one command: ``sources`` are ``(real root, writable)`` pairs.

    ``masked`` protected paths are hidden by the call's own mount namespace instead (see
    :mod:`corral.shell.landlock_launch`), so they need no carving: the folder around them
    keeps an ordinary rule (the drive root stays usable).
    """
    everything = _handled_fs(abi)
    hidden = set(masked)
    secret = [real for p in protected if (real := os.path.realpath(p)) not in hidden]
    data_real = os.path.realpath(data_dir)
    rules: list[Rule] = [Rule(path, READ) for path in toolchain if os.path.lexists(path)]
    rules.append(Rule("/proc", READ_FILE | READ_DIR))
    rules += [Rule(device, _DEVICE_RIGHTS) for device in DEVICES if os.path.exists(device)]
    rules.append(Rule(home, everything))
    for root, writable in sources:
        if not os.path.exists(root):
            continue
        # A source inside the data folder (the drive) is meant to be seen; the folder
        # around it is not, whichever source covers it.
        forbidden = secret if _within(root, data_real) else [data_real, *secret]
        _carve(root, everything if writable else READ, forbidden, rules)
    return LandlockPlan(abi=abi, rules=tuple(rules), network=network, connect_ports=connect_ports)
