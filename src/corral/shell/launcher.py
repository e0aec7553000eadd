"""Start a helper process (an MCP stdio server, an operator hook) never as root.

``python -m corral.shell.launcher --uid UID -- COMMAND [ARG...]`` becomes ``UID`` (and gid,
with no supplementary groups) when it runs as root, sets ``no_new_privs``, installs the
sandbox's seccomp filter (:mod:`corral.shell.seccomp`: no set-id files, no namespaces, no
ptrace...) and execs ``COMMAND``. It confines identity and set-id modes, not the network:
the filter is built without a socket rule, so a helper that needs the network (an MCP
fetch server) keeps it. For spawners that take an argv but no pre-exec hook (the
MCP SDK's ``stdio_client``): prefix the argv with :func:`launcher_argv`.

Every failure exits 126 with one line on stderr saying what failed: the command never runs
with less confinement than asked.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from corral.shell.restrict_self import drop_to, install_filter, no_new_privs
from corral.shell.seccomp import build_filter

__all__ = ["launcher_argv", "main"]

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


def _parse(argv: Sequence[str]) -> tuple[int, list[str]]:
    if len(argv) < 4 or argv[0] != "--uid" or argv[2] != "--" or not argv[1].isdigit():
        raise ValueError("usage: python -m corral.shell.launcher --uid UID -- COMMAND [ARG...]")
    return int(argv[1]), list(argv[3:])


def main(argv: Sequence[str]) -> int:
    """Confine this process, then exec the command (returns only on failure)."""
    try:
        uid, command = _parse(argv)
    except ValueError as exc:
        print(f"corral launcher: {exc}", file=sys.stderr)
        return _CANNOT_RUN
    try:
        if os.geteuid() == 0:
            drop_to(uid)
        if no_new_privs() != 0:
            raise OSError("prctl(PR_SET_NO_NEW_PRIVS) was refused")
        install_filter(build_filter(socket_families=None))  # the network stays
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
