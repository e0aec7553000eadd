"""A seccomp filter for sandboxed commands, built here as a classic-BPF program.

The program checks the architecture first (a foreign one, such as 32-bit calls made through
``int 0x80`` on x86-64, or the x32 ABI, kills the process: their syscall numbers mean other
calls), then answers a deny list with an errno and allows everything else. The deny list
follows Flatpak's (``common/flatpak-run.c``: no new namespaces or mounts, no kernel keyring,
no dmesg, no NUMA/VM surgery, no ``TIOCSTI``/``TIOCLINUX``, ``clone3`` answered ``ENOSYS``
so libc falls back to ``clone`` whose flags the filter can read, personality changes
refused) and adds what Codex's Linux sandbox and Docker's default profile deny: ``ptrace``
and cross-process memory access, ``io_uring`` (its operations bypass syscall filtering),
module loading, ``kexec``, ``bpf``, ``reboot``, swap, raw port I/O, accounting, quotas and
the clocks. No set-id file comes out of a sandbox: ``chmod`` and its kin, file creation
(``open``/``openat`` with ``O_CREAT`` or ``O_TMPFILE``, ``creat``) and ``mknod`` are refused
when their mode carries ``S_ISUID``/``S_ISGID`` (``mkdir`` ``S_ISGID``), ``mknod`` of a
device too; ``openat2``, whose mode travels in a struct, answers ``ENOSYS`` so libc falls
back to ``openat``. A caller may also keep ``socket()`` to a list of address families;
without ``AF_UNIX`` in it, ``socketpair()`` makes only connected (stream, seqpacket) pairs.

No dependency: libseccomp's Python binding needs its C library and headers at install time,
while this program is about a hundred instructions whose every line is tested here. Arches
with a table: x86-64 and aarch64; elsewhere :func:`build_filter` raises
:class:`SeccompUnsupported` and the confinement says so.
"""

from __future__ import annotations

import errno
import platform
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ARCHES",
    "CLONE_NAMESPACE_FLAGS",
    "DENIED",
    "MKNOD_RULES",
    "MODE_RULES",
    "SeccompUnsupported",
    "build_filter",
    "native_arch",
]

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_ALU_AND_K = 0x54
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF_0000
_RET_ERRNO = 0x0005_0000
_RET_KILL_PROCESS = 0x8000_0000

# Offsets in struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
_NR = 0
_ARCH = 4


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of argument ``index`` (little-endian arches only)."""
    return 16 + 8 * index


CLONE_NAMESPACE_FLAGS = (
    0x0002_0000  # CLONE_NEWNS
    | 0x0200_0000  # CLONE_NEWCGROUP
    | 0x0400_0000  # CLONE_NEWUTS
    | 0x0800_0000  # CLONE_NEWIPC
    | 0x1000_0000  # CLONE_NEWUSER
    | 0x2000_0000  # CLONE_NEWPID
    | 0x4000_0000  # CLONE_NEWNET
    | 0x0000_0080  # CLONE_NEWTIME
)
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_SET_ID_BITS = 0o6000  # S_ISUID | S_ISGID
_S_ISGID = 0o2000
_S_IFMT, _S_IFCHR, _S_IFBLK = 0o170000, 0o020000, 0o060000
_CREATING = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE (same values on x86-64 and aarch64)
MODE_RULES: dict[str, tuple[int, int | None, int]] = {
    "chmod": (1, None, _SET_ID_BITS),
    "fchmod": (1, None, _SET_ID_BITS),
    "fchmodat": (2, None, _SET_ID_BITS),
    "fchmodat2": (2, None, _SET_ID_BITS),
    "mkdir": (1, None, _S_ISGID),
    "mkdirat": (2, None, _S_ISGID),
    "creat": (1, None, _SET_ID_BITS),
    "open": (2, 1, _SET_ID_BITS),
    "openat": (3, 2, _SET_ID_BITS),
}
"""Calls refused (EPERM) when their mode carries set-id bits: the mode's argument, the
flags' argument (None: the call always creates; else only with O_CREAT or O_TMPFILE, the
mode being ignored otherwise) and the refused bits. A setuid file a command makes would be
one a host user can run (the drive is mounted nosuid only inside the sandbox)."""
MKNOD_RULES = {"mknod": 1, "mknodat": 2}
"""mknod calls (mode's argument) refused with set-id bits or for a device node."""
_AF_UNIX = 1
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF
"""The type's low bits; the rest are SOCK_NONBLOCK and SOCK_CLOEXEC (same on both arches)."""
_PERSONALITIES = (0x0, 0x8, 0xFFFF_FFFF)
"""PER_LINUX, PER_LINUX32 and the query value: what Flatpak lets through."""


@dataclass(frozen=True, slots=True)
class Arch:
    name: str
    audit: int
    """AUDIT_ARCH_* value the kernel puts in seccomp_data.arch."""
    numbers: dict[str, int]
    x32_bit: int | None = None


_X86_64 = Arch(
    "x86_64",
    0xC000_003E,
    {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "pidfd_getfd": 438, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "unshare": 272, "setns": 308, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "kexec_load": 246, "kexec_file_load": 320, "bpf": 321, "keyctl": 250, "add_key": 248,
        "request_key": 249, "perf_event_open": 298, "userfaultfd": 323, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167,
        "swapoff": 168, "open_by_handle_at": 304, "name_to_handle_at": 303, "iopl": 172,
        "ioperm": 173, "acct": 163, "quotactl": 179, "quotactl_fd": 443,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
        "syslog": 103, "uselib": 134, "modify_ldt": 154, "move_pages": 279, "mbind": 237,
        "get_mempolicy": 239, "set_mempolicy": 238, "migrate_pages": 256,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "lookup_dcookie": 212, "vhangup": 153, "sethostname": 170, "setdomainname": 171,
        "fanotify_init": 300, "clone": 56, "clone3": 435, "personality": 135, "ioctl": 16,
        "socket": 41, "socketpair": 53, "openat2": 437, "chmod": 90, "fchmod": 91,
        "fchmodat": 268, "fchmodat2": 452, "mknod": 133, "mknodat": 259, "open": 2,
        "openat": 257, "creat": 85, "mkdir": 83, "mkdirat": 258,
    },
    x32_bit=0x4000_0000,
)  # fmt: skip
_AARCH64 = Arch(
    "aarch64",
    0xC000_00B7,
    {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
        "pidfd_getfd": 438, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "unshare": 97, "setns": 268, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "kexec_load": 104, "kexec_file_load": 294, "bpf": 280, "keyctl": 219, "add_key": 217,
        "request_key": 218, "perf_event_open": 241, "userfaultfd": 282, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224,
        "swapoff": 225, "open_by_handle_at": 265, "name_to_handle_at": 264, "acct": 89,
        "quotactl": 60, "quotactl_fd": 443, "settimeofday": 170, "clock_settime": 112,
        "clock_adjtime": 266, "adjtimex": 171, "syslog": 116, "move_pages": 239, "mbind": 235,
        "get_mempolicy": 236, "set_mempolicy": 237, "migrate_pages": 238,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "lookup_dcookie": 18, "vhangup": 58, "sethostname": 161, "setdomainname": 162,
        "fanotify_init": 262, "clone": 220, "clone3": 435, "personality": 92, "ioctl": 29,
        "socket": 198, "socketpair": 199, "openat2": 437, "fchmod": 52, "fchmodat": 53,
        "fchmodat2": 452, "mknodat": 33, "openat": 56, "mkdirat": 34,
    },
)  # fmt: skip
ARCHES = {arch.name: arch for arch in (_X86_64, _AARCH64)}

DENIED: dict[str, int] = {
    **dict.fromkeys(
        (
            "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
            "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
            "kexec_load", "kexec_file_load", "bpf", "keyctl", "add_key", "request_key",
            "perf_event_open", "userfaultfd", "init_module", "finit_module", "delete_module",
            "reboot", "swapon", "swapoff", "open_by_handle_at", "name_to_handle_at",
            "iopl", "ioperm", "acct", "quotactl", "quotactl_fd", "settimeofday",
            "clock_settime", "clock_adjtime", "adjtimex", "syslog", "uselib", "modify_ldt",
            "move_pages", "mbind", "get_mempolicy", "set_mempolicy", "migrate_pages",
            "io_uring_setup", "io_uring_enter", "io_uring_register", "lookup_dcookie",
            "vhangup", "sethostname", "setdomainname", "fanotify_init",
        ),
        errno.EPERM,
    ),
    # The new mount API, clone3 and openat2 answer ENOSYS, so libc and tools fall back to
    # calls the filter can judge (clone3's flags and openat2's mode sit behind a pointer
    # seccomp cannot read).
    **dict.fromkeys(
        ("open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
         "mount_setattr", "clone3", "openat2"),
        errno.ENOSYS,
    ),
}  # fmt: skip
"""Syscalls refused outright, with the errno they get (absent on an arch: skipped)."""


class SeccompUnsupported(Exception):
    """No syscall table for this machine's architecture."""


def native_arch() -> str:
    """The machine's architecture as the tables name it (``x86_64``, ``aarch64``...)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


class _Program:
    def __init__(self) -> None:
        self.code: list[tuple[int, int, int, int]] = []

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, value: int, if_true: int, if_false: int) -> None:
        self.code.append((op, if_true, if_false, value))

    def ret(self, value: int) -> None:
        self.code.append((_RET_K, 0, 0, value))

    def when_nr(self, nr: int, body: Sequence[tuple[int, int, int, int]]) -> None:
        """Run ``body`` (which must end in returns) when the syscall is ``nr``."""
        self.jump(_JEQ_K, nr, 0, len(body))
        self.code.extend(body)

    def packed(self) -> bytes:
        return b"".join(struct.pack("<HBBI", *row) for row in self.code)


def _errno(code: int) -> int:
    return _RET_ERRNO | code


def _arg_rule(
    index: int, test: int, value: int, *, refuse_when: bool, code: int
) -> list[tuple[int, int, int, int]]:
    """Load argument ``index``; refuse when ``test`` against ``value`` is ``refuse_when``."""
    refuse, allow = (0, 1) if refuse_when else (1, 0)
    return [
        (_LD_W_ABS, 0, 0, _arg_low(index)),
        (test, refuse, allow, value),
        (_RET_K, 0, 0, _errno(code)),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]


def _mode_rule(mode_arg: int, flags_arg: int | None, bits: int) -> list[tuple[int, int, int, int]]:
    """Refuse when the mode has ``bits`` (and, with ``flags_arg``, the call creates)."""
    body: list[tuple[int, int, int, int]] = []
    if flags_arg is not None:
        body += [(_LD_W_ABS, 0, 0, _arg_low(flags_arg)), (_JSET_K, 0, 3, _CREATING)]
    return [
        *body,
        (_LD_W_ABS, 0, 0, _arg_low(mode_arg)),
        (_JSET_K, 0, 1, bits),
        (_RET_K, 0, 0, _errno(errno.EPERM)),
        (_LD_W_ABS, 0, 0, _NR),
    ]


def _mknod_rule(mode_arg: int) -> list[tuple[int, int, int, int]]:
    """Refuse set-id bits and character or block devices."""
    return [
        (_LD_W_ABS, 0, 0, _arg_low(mode_arg)),
        (_JSET_K, 3, 0, _SET_ID_BITS),
        (_ALU_AND_K, 0, 0, _S_IFMT),
        (_JEQ_K, 1, 0, _S_IFCHR),
        (_JEQ_K, 0, 1, _S_IFBLK),
        (_RET_K, 0, 0, _errno(errno.EPERM)),
        (_LD_W_ABS, 0, 0, _NR),
    ]


def _socket_rule(families: Iterable[int]) -> list[tuple[int, int, int, int]]:
    allowed = sorted(set(families))
    body: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _arg_low(0))]
    for position, family in enumerate(allowed):
        # A match jumps over the remaining checks and the refusal to the allow.
        body.append((_JEQ_K, len(allowed) - position, 0, family))
    body += [(_RET_K, 0, 0, _errno(errno.EAFNOSUPPORT)), (_RET_K, 0, 0, _RET_ALLOW)]
    return body


_AF_INET, _AF_INET6, _IPPROTO_TCP = 2, 10, 6


def _tcp_socket_rule() -> list[tuple[int, int, int, int]]:
    """Only TCP sockets: AF_INET or AF_INET6, stream, protocol 0 or TCP (no UDP, no ICMP,
    no MPTCP): what Landlock's network rules cover, and nothing they would not."""
    return [
        (_LD_W_ABS, 0, 0, _arg_low(0)),
        (_JEQ_K, 1, 0, _AF_INET),
        (_JEQ_K, 0, 8, _AF_INET6),
        (_LD_W_ABS, 0, 0, _arg_low(1)),
        (_ALU_AND_K, 0, 0, _SOCK_TYPE_MASK),
        (_JEQ_K, 0, 4, _SOCK_STREAM),
        (_LD_W_ABS, 0, 0, _arg_low(2)),
        (_JEQ_K, 4, 0, 0),
        (_JEQ_K, 3, 0, _IPPROTO_TCP),
        (_RET_K, 0, 0, _errno(errno.EPROTONOSUPPORT)),
        (_RET_K, 0, 0, _errno(errno.EPERM)),
        (_RET_K, 0, 0, _errno(errno.EAFNOSUPPORT)),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]


def _socketpair_rule() -> list[tuple[int, int, int, int]]:
    """Refuse socket pairs of any type but stream and seqpacket.

    A datagram pair (``SOCK_RAW`` is one too for ``AF_UNIX``) can still ``sendto`` any
    socket path, or ``connect`` to one, after its creation; a stream or seqpacket pair is
    connected for good (``EISCONN``) and reaches nothing but its twin.
    """
    return [
        (_LD_W_ABS, 0, 0, _arg_low(1)),
        (_ALU_AND_K, 0, 0, _SOCK_TYPE_MASK),
        (_JEQ_K, 2, 0, _SOCK_STREAM),
        (_JEQ_K, 1, 0, _SOCK_SEQPACKET),
        (_RET_K, 0, 0, _errno(errno.EPERM)),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]


def build_filter(
    arch: str | None = None,
    *,
    socket_families: Iterable[int] | None = None,
    tcp_only: bool = False,
) -> bytes:
    """The filter as bytes of ``struct sock_filter`` (what ``bwrap --seccomp FD`` reads).

    ``socket_families``: when given, ``socket()`` for any other address family fails with
    ``EAFNOSUPPORT``; without ``AF_UNIX`` among them, ``socketpair()`` is kept to stream
    and seqpacket pairs, so no call creates a UNIX socket that can address a path (a host
    daemon's socket in a source, ``/dev/log``...) or an abstract name. ``tcp_only``
    (instead of ``socket_families``): TCP sockets only, no UNIX socket either (the Landlock
    tier's proxy mode, whose Landlock rules limit TCP connect to the proxy's port).
    """
    table = ARCHES.get(arch or native_arch())
    if table is None:
        raise SeccompUnsupported(
            f"no seccomp syscall table for architecture {arch or native_arch()!r} "
            f"(known: {', '.join(sorted(ARCHES))})"
        )
    numbers = table.numbers
    program = _Program()
    program.load(_ARCH)
    program.jump(_JEQ_K, table.audit, 1, 0)
    program.ret(_RET_KILL_PROCESS)
    program.load(_NR)
    if table.x32_bit is not None:
        program.jump(_JGE_K, table.x32_bit, 0, 1)
        program.ret(_RET_KILL_PROCESS)
    for name, code in DENIED.items():
        if name in numbers:
            program.when_nr(numbers[name], [(_RET_K, 0, 0, _errno(code))])
    # Rules reading an argument come last: each ends in a return or reloads the syscall
    # number, so every check after it still compares the number.
    program.when_nr(
        numbers["clone"],
        _arg_rule(0, _JSET_K, CLONE_NAMESPACE_FLAGS, refuse_when=True, code=errno.EPERM),
    )
    # The kernel reads only the low 32 bits of an ioctl request: so does the filter, which
    # closes the high-bits bypass of CVE-2019-10063.
    for request in (_TIOCSTI, _TIOCLINUX):
        program.when_nr(
            numbers["ioctl"],
            [
                (_LD_W_ABS, 0, 0, _arg_low(1)),
                (_JEQ_K, 0, 1, request),
                (_RET_K, 0, 0, _errno(errno.EPERM)),
                (_LD_W_ABS, 0, 0, _NR),
            ],
        )
    for name, (mode_arg, flags_arg, bits) in MODE_RULES.items():
        if name in numbers:
            program.when_nr(numbers[name], _mode_rule(mode_arg, flags_arg, bits))
    for name, mode_arg in MKNOD_RULES.items():
        if name in numbers:
            program.when_nr(numbers[name], _mknod_rule(mode_arg))
    personality = [(_LD_W_ABS, 0, 0, _arg_low(0))]
    for position, value in enumerate(_PERSONALITIES):
        personality.append((_JEQ_K, len(_PERSONALITIES) - position, 0, value))
    personality += [(_RET_K, 0, 0, _errno(errno.EPERM)), (_RET_K, 0, 0, _RET_ALLOW)]
    program.when_nr(numbers["personality"], personality)
    if tcp_only:
        program.when_nr(numbers["socket"], _tcp_socket_rule())
        program.when_nr(numbers["socketpair"], _socketpair_rule())
    elif socket_families is not None:
        families = set(socket_families)
        program.when_nr(numbers["socket"], _socket_rule(families))
        if _AF_UNIX not in families:
            program.when_nr(numbers["socketpair"], _socketpair_rule())
    program.ret(_RET_ALLOW)
    return program.packed()
