"""Start a helper process (an MCP stdio server, an operator hook) never as root.

``python -m corral.shell.launcher [--net-port N | --no-network] --uid UID -- COMMAND [ARG...]``
becomes ``UID`` (and gid, with no supplementary groups) when it runs as root, sets
``no_new_privs``, installs the sandbox's seccomp filter (:mod:`corral.shell.seccomp`: no
set-id files, no namespaces, no ptrace...) and execs ``COMMAND``. Without a network option
it confines identity and set-id modes, not the network: the filter is built without a
socket rule, so a helper that needs the network (an MCP fetch server) keeps it. With one
(the Landlock tier's helpers, :func:`with_network`) it also applies a Landlock ruleset
(ABI 4) handling only TCP bind and connect, connect allowed to port ``N`` alone (the
egress proxy on ``127.0.0.1``) or to none, and the TCP-only seccomp mode (no UDP, so no
DNS of its own, and no UNIX sockets). For spawners that take an argv but no pre-exec hook
(the MCP SDK's ``stdio_client``): prefix the argv with :func:`launcher_argv`.

Every failure exits 126 with one line on stderr saying what failed: the command never runs
with less confinement than asked.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

from corral.shell.restrict_self import (
    drop_to,
    install_filter,
    landlock_abi,
    no_new_privs,
    restrict_landlock,
)
from corral.shell.seccomp import build_filter

__all__ = ["launcher_argv", "main", "with_network"]

_TCP_BIND_CONNECT = (1 << 0) | (1 << 1)
"""``LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP``."""

_CANNOT_RUN = 126
_UNREACHABLE = (
    "; the program (found on the PATH it was given) and every folder above it must be "
    "readable and executable by that uid"
)


_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from corral.shell.launcher import main; sys.exit(main(sys.argv[2:]))"
)
"""Python runs isolated (``-I``): neither the working folder, often the helper's own
writable home, nor ``PYTHON*`` variables can put a module in front of Corral's while the
launcher still runs as root; Corral is found where this file was loaded from."""


def launcher_argv(command: Sequence[str], *, uid: int, python: str | None = None) -> list[str]:
    """``command`` wrapped so it starts as ``uid`` (when root) under the seccomp filter."""
    source = str(Path(__file__).resolve().parents[2])
    return [python or sys.executable, "-I", "-c", _BOOT, source, "--uid", str(uid), "--", *command]


def with_network(argv: Sequence[str], port: int | None) -> list[str]:
    """A :func:`launcher_argv` (or, as the current uid, any argv) whose TCP may connect to
    ``port`` only (None: to no port at all), with no other socket than TCP."""
    option = ["--no-network"] if port is None else ["--net-port", str(port)]
    argv = list(argv)
    if argv[1:4] == ["-I", "-c", _BOOT]:
        return [*argv[:5], *option, *argv[5:]]
    return with_network(launcher_argv(argv, uid=os.geteuid()), port)


_USAGE = (
    "usage: python -m corral.shell.launcher [--net-port N | --no-network] --uid UID -- "
    "COMMAND [ARG...]"
)


def _parse(argv: Sequence[str]) -> tuple[int, tuple[int, ...] | None, list[str]]:
    """The uid, the TCP ports a connect may reach (None: the network stays) and the command."""
    ports: tuple[int, ...] | None = None
    if argv[:1] == ["--no-network"]:
        ports, argv = (), argv[1:]
    elif argv[:1] == ["--net-port"]:
        if len(argv) < 2 or not argv[1].isdigit() or not 0 < int(argv[1]) < 65536:
            raise ValueError("--net-port takes a TCP port (1-65535)")
        ports, argv = (int(argv[1]),), argv[2:]
    if len(argv) < 4 or argv[0] != "--uid" or argv[2] != "--" or not argv[1].isdigit():
        raise ValueError(_USAGE)
    return int(argv[1]), ports, list(argv[3:])


def _confine_network(ports: tuple[int, ...]) -> None:
    abi = landlock_abi()
    if abi < 4:
        raise OSError(
            f"the network cannot be confined: Landlock ABI 4 is needed for TCP rules "
            f"(this kernel has {abi})"
        )
    # Only the network is handled: the helper's file view stays the host's.
    restrict_landlock(struct.pack("<QQ", 0, _TCP_BIND_CONNECT), [], 0, ports)


def main(argv: Sequence[str]) -> int:
    """Confine this process, then exec the command (returns only on failure)."""
    try:
        uid, ports, command = _parse(argv)
    except ValueError as exc:
        print(f"corral launcher: {exc}", file=sys.stderr)
        return _CANNOT_RUN
    try:
        if os.geteuid() == 0:
            drop_to(uid)
        if no_new_privs() != 0:
            raise OSError("prctl(PR_SET_NO_NEW_PRIVS) was refused")
        if ports is None:
            install_filter(build_filter(socket_families=None))  # the network stays
        else:
            _confine_network(ports)
            install_filter(build_filter(tcp_only=True))
        os.execvp(command[0], command)
    except OSError as exc:
        hint = _UNREACHABLE if exc.errno in (errno.EACCES, errno.ENOENT) else ""
        print(
            f"corral launcher: cannot start {command[0]!r} confined as uid {os.getuid()}: "
            f"{exc.strerror or exc}{hint}",
            file=sys.stderr,
        )
    return _CANNOT_RUN


if __name__ == "__main__":  # pragma: no cover - exercised through a real subprocess
    sys.exit(main(sys.argv[1:]))
