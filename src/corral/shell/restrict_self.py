"""The system calls by which a process confines itself: Landlock, no_new_privs, seccomp.

Standard library only and nothing else imported, so the Landlock tier's launcher
(:mod:`corral.shell.landlock_launch`) loads this file on its own in a few milliseconds;
:mod:`corral.shell.landlock` plans the rules and uses the same calls in a forked child.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

__all__ = [
    "FILE_RIGHTS",
    "drop_to",
    "install_filter",
    "landlock_abi",
    "no_new_privs",
    "restrict_landlock",
]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
_CONNECT_TCP = 1 << 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2

FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
"""The rights a rule on a file (not a folder) may hold: execute, write, read, truncate,
device ioctl."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: int | ctypes.Array[ctypes.c_char] | None) -> int:
    """``syscall(2)`` with every integer passed as a full ``long`` (it is variadic)."""
    wide = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return int(_libc.syscall(ctypes.c_long(number), *wide))


def _fail(what: str) -> None:
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    return max(0, _syscall(_CREATE_RULESET, None, 0, _VERSION))


def no_new_privs() -> int:
    """``prctl(PR_SET_NO_NEW_PRIVS, 1)``: no exec can gain privileges (setuid bits, caps)."""
    zero = ctypes.c_ulong(0)
    return int(_libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), zero, zero, zero))


def drop_to(uid: int) -> None:
    """Become ``uid`` (gid the same, no supplementary groups) for good; root only."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid) or os.getgroups():
        raise OSError(f"the switch to uid {uid} did not hold")


def restrict_landlock(
    attr: bytes, rules: list[tuple[str, int]], handled_fs: int, connect_ports: tuple[int, ...] = ()
) -> None:  # pragma: no cover - runs in the child or the launcher, before exec
    """Restrict the calling process for good to ``rules`` (and TCP connect to
    ``connect_ports``); raises :class:`OSError` on any failure. ``attr`` is the
    ``struct landlock_ruleset_attr`` of the kernel's ABI."""
    buffer = ctypes.create_string_buffer(attr)
    ruleset = _syscall(_CREATE_RULESET, buffer, len(buffer.raw), 0)
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    try:
        for path, access in rules:
            _add_rule(ruleset, path, access & handled_fs)
        for port in connect_ports:
            # struct landlock_net_port_attr: allowed_access, port (any address: by port only).
            net = ctypes.create_string_buffer(struct.pack("<QQ", _CONNECT_TCP, port))
            if _syscall(_ADD_RULE, ruleset, _RULE_NET_PORT, net, 0) != 0:
                _fail(f"landlock_add_rule(connect port {port})")
        if no_new_privs() != 0:
            _fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if _syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _add_rule(ruleset: int, path: str, access: int) -> None:  # pragma: no cover - in the child
    try:
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # gone since the plan was made: nothing to grant
    try:
        if not stat.S_ISDIR(os.fstat(handle).st_mode):
            access &= FILE_RIGHTS
        beneath = ctypes.create_string_buffer(struct.pack("<Qi", access, handle))
        if _syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, beneath, 0) != 0:
            _fail(f"landlock_add_rule({path!r})")
    finally:
        os.close(handle)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install_filter(program: bytes) -> None:  # pragma: no cover - in the launcher, before exec
    """Install a classic-BPF seccomp ``program`` on the calling thread (``no_new_privs`` must
    be set already); raises :class:`OSError` when refused."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    zero = ctypes.c_ulong(0)
    done = _libc.prctl(
        ctypes.c_int(_PR_SET_SECCOMP),
        ctypes.c_ulong(_SECCOMP_MODE_FILTER),
        ctypes.byref(fprog),
        zero,
        zero,
    )
    if done != 0:
        _fail("prctl(PR_SET_SECCOMP)")
