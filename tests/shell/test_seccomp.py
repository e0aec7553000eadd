"""The seccomp program, judged by a small classic-BPF interpreter over synthetic calls.

The kernel runs the same program in ``test_confinement``; here every rule and every
evasion we would try next is checked one by one on both architectures, without needing a
machine of each kind.
"""

from __future__ import annotations

import errno
import socket
import struct

import pytest

from corral.shell.seccomp import (
    ARCHES,
    CLONE_NAMESPACE_FLAGS,
    DENIED,
    MKNOD_RULES,
    MODE_RULES,
    SeccompUnsupported,
    build_filter,
)

ALLOW = "allow"
KILL = "kill"


def run(program: bytes, *, arch: int, nr: int, args: tuple[int, ...] = ()) -> str | int:
    """Evaluate ``program`` on one ``seccomp_data``; returns allow, kill or the errno."""
    full = (*args, *(0,) * (6 - len(args)))
    data = struct.pack("<IIQ6Q", nr & 0xFFFF_FFFF, arch, 0, *(a & (2**64 - 1) for a in full))
    code = [struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:
            acc &= k
        elif op in (0x15, 0x35, 0x45):
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: acc & k != 0}[op]
            pc += jt if taken else jf
        elif op == 0x06:
            if k == 0x7FFF_0000:
                return ALLOW
            if k == 0x8000_0000:
                return KILL
            assert k & 0xFFFF_0000 == 0x0005_0000, hex(k)
            return k & 0xFFFF
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
        pc += 1


@pytest.fixture(params=sorted(ARCHES))
def arch(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_every_denied_call_gets_its_errno(arch: str) -> None:
    table = ARCHES[arch]
    program = build_filter(arch)
    checked = 0
    for name, code in DENIED.items():
        if name in table.numbers:
            assert run(program, arch=table.audit, nr=table.numbers[name]) == code, name
            checked += 1
    assert checked >= 50
    for name in ("read", "write", "openat", "execve"):
        number = {"read": 0, "write": 1, "openat": 257, "execve": 59}[name]
        if arch == "aarch64":
            number = {"read": 63, "write": 64, "openat": 56, "execve": 221}[name]
        assert run(program, arch=table.audit, nr=number) == ALLOW, name


def test_the_brief_list_is_covered() -> None:
    must = {
        "ptrace", "mount", "umount2", "pivot_root", "unshare", "setns", "kexec_load",
        "kexec_file_load", "bpf", "keyctl", "add_key", "request_key", "perf_event_open",
        "userfaultfd", "init_module", "finit_module", "delete_module", "reboot", "swapon",
        "swapoff", "open_by_handle_at", "clone3", "iopl", "ioperm", "acct", "quotactl",
        "settimeofday", "clock_settime",
    }  # fmt: skip
    assert must <= set(DENIED)


def test_a_foreign_architecture_or_the_x32_abi_is_killed() -> None:
    x86 = ARCHES["x86_64"]
    program = build_filter("x86_64")
    assert run(program, arch=0x4000_0003, nr=26) == KILL  # i386 via int 0x80: 26 is ptrace
    assert run(program, arch=x86.audit, nr=0x4000_0000 | 101) == KILL  # x32 ptrace
    assert run(program, arch=x86.audit, nr=-1) == KILL
    assert run(build_filter("aarch64"), arch=x86.audit, nr=0) == KILL


def test_clone_with_any_namespace_flag_is_refused(arch: str) -> None:
    table = ARCHES[arch]
    program = build_filter(arch)
    clone = table.numbers["clone"]
    thread = 0x3D0F00  # what pthread_create passes
    assert run(program, arch=table.audit, nr=clone, args=(thread,)) == ALLOW
    assert run(program, arch=table.audit, nr=clone, args=(0x11,)) == ALLOW  # fork()
    for bit in range(32):
        flag = 1 << bit
        if flag & CLONE_NAMESPACE_FLAGS:
            got = run(program, arch=table.audit, nr=clone, args=(thread | flag,))
            assert got == errno.EPERM, hex(flag)
    # High bits set above the 32 the kernel reads change nothing.
    sneaky = (1 << 40) | 0x1000_0000
    assert run(program, arch=table.audit, nr=clone, args=(sneaky,)) == errno.EPERM


def test_terminal_injection_is_refused_whatever_the_high_bits(arch: str) -> None:
    table = ARCHES[arch]
    program = build_filter(arch)
    ioctl = table.numbers["ioctl"]
    for request in (0x5412, 0x541C, 0x1_0000_5412, 0xFFFF_FFFF_0000_541C):
        assert run(program, arch=table.audit, nr=ioctl, args=(0, request)) == errno.EPERM
    for request in (0x5401, 0x5413, 0x541B):  # TCGETS, TIOCGWINSZ, FIONREAD
        assert run(program, arch=table.audit, nr=ioctl, args=(1, request)) == ALLOW


def test_only_the_plain_personalities_pass(arch: str) -> None:
    table = ARCHES[arch]
    program = build_filter(arch)
    number = table.numbers["personality"]
    for value in (0, 8, 0xFFFF_FFFF):
        assert run(program, arch=table.audit, nr=number, args=(value,)) == ALLOW
    for value in (0x0040000, 0x0400000, 0x0000001):  # ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC
        assert run(program, arch=table.audit, nr=number, args=(value,)) == errno.EPERM


def test_socket_families_are_filtered_only_when_asked(arch: str) -> None:
    table = ARCHES[arch]
    number = table.numbers["socket"]
    every = build_filter(arch)
    inet_only = build_filter(arch, socket_families=(socket.AF_INET, socket.AF_INET6))
    none = build_filter(arch, socket_families=())
    for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_NETLINK, socket.AF_PACKET):
        assert run(every, arch=table.audit, nr=number, args=(family,)) == ALLOW
        assert run(none, arch=table.audit, nr=number, args=(family,)) == errno.EAFNOSUPPORT
    assert run(inet_only, arch=table.audit, nr=number, args=(socket.AF_INET6,)) == ALLOW
    for family in (socket.AF_UNIX, socket.AF_PACKET, socket.AF_NETLINK):
        got = run(inet_only, arch=table.audit, nr=number, args=(family,))
        assert got == errno.EAFNOSUPPORT, family
    # The kernel reads the family as an int: high bits do not smuggle AF_UNIX through.
    smuggled = run(inet_only, arch=table.audit, nr=number, args=(socket.AF_UNIX | 1 << 40,))
    assert smuggled == errno.EAFNOSUPPORT


def test_without_unix_sockets_only_connected_socket_pairs_are_made(arch: str) -> None:
    """A datagram pair can sendto (or connect to) any socket path after its creation."""
    table = ARCHES[arch]
    number = table.numbers["socketpair"]
    flags = socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
    no_unix = build_filter(arch, socket_families=(socket.AF_INET, socket.AF_INET6))
    with_unix = build_filter(arch, socket_families=(socket.AF_UNIX,))
    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
        for variant in (kind, kind | flags):
            args = (socket.AF_UNIX, variant, 0, 0)
            assert run(no_unix, arch=table.audit, nr=number, args=args) == ALLOW
    # SOCK_RAW is a datagram pair for AF_UNIX; flags and high bits do not hide the type.
    for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_RDM, 0, 0xF):
        for variant in (kind, kind | flags, kind | 1 << 40):
            args = (socket.AF_UNIX, variant, 0, 0)
            assert run(no_unix, arch=table.audit, nr=number, args=args) == errno.EPERM, variant
            assert run(with_unix, arch=table.audit, nr=number, args=args) == ALLOW
            assert run(build_filter(arch), arch=table.audit, nr=number, args=args) == ALLOW


def test_an_unknown_architecture_is_refused_clearly() -> None:
    with pytest.raises(SeccompUnsupported, match="'riscv64'"):
        build_filter("riscv64")


def test_no_set_id_bit_is_set_by_any_mode_call(arch: str) -> None:
    table = ARCHES[arch]
    program = build_filter(arch)
    checked = 0
    for name, (mode_arg, flags_arg, bits) in MODE_RULES.items():
        if name not in table.numbers:
            continue
        checked += 1
        nr = table.numbers[name]

        def call(
            mode: int,
            flags: int = 0o100,
            *,
            nr: int = nr,
            at: int = mode_arg,
            fl: int | None = flags_arg,
        ) -> str | int:
            args = [0] * 6
            args[at] = mode
            if fl is not None:
                args[fl] = flags
            return run(program, arch=table.audit, nr=nr, args=tuple(args))

        for mode in (0o4755, 0o2755, 0o6755, 0o104755, 0o4000 | 1 << 40):
            if mode & bits:
                assert call(mode) == errno.EPERM, (name, oct(mode))
        assert call(0o755) == ALLOW and call(0o1777) == ALLOW, name  # sticky bit is fine
        if flags_arg is not None:
            # O_TMPFILE (with O_DIRECTORY) creates too; without O_CREAT the mode is unused.
            assert call(0o4755, 0o20200000 | 2) == errno.EPERM, name
            assert call(0o4755, 0) == ALLOW and call(0o4755, 0o2) == ALLOW, name
    assert checked == (9 if arch == "x86_64" else 5)


def test_mknod_of_a_device_or_a_set_id_file_is_refused(arch: str) -> None:
    table = ARCHES[arch]
    program = build_filter(arch)
    for name, mode_arg in MKNOD_RULES.items():
        if name not in table.numbers:
            continue

        def call(mode: int, *, nr: int = table.numbers[name], at: int = mode_arg) -> str | int:
            args = [0] * 6
            args[at] = mode
            return run(program, arch=table.audit, nr=nr, args=tuple(args))

        for refused in (0o020666, 0o060660, 0o104755, 0o102755, 0o024666):
            assert call(refused) == errno.EPERM, (name, oct(refused))
        for allowed in (0o010644, 0o140755, 0o100644, 0o644):  # fifo, socket, files
            assert call(allowed) == ALLOW, (name, oct(allowed))


def test_openat2_falls_back_to_openat(arch: str) -> None:
    table = ARCHES[arch]
    assert run(build_filter(arch), arch=table.audit, nr=table.numbers["openat2"]) == errno.ENOSYS
