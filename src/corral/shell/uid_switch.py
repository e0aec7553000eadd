"""Starting bubblewrap as the sandbox uid without forking the platform's whole memory.

``subprocess`` switches uid with ``user=``/``group=``/``extra_groups=`` only in a child made
by a full ``fork()`` (CPython refuses ``vfork()`` when it must set ids), and a full fork of
the platform (about 150 MB mapped) costs around 10 ms before the child even execs, then
copy-on-write faults in the parent. A small util-linux program makes the same switch (real,
effective and saved uid and gid, no supplementary groups, capabilities cleared by the kernel
as for ``user=``) and then execs the command, so the spawn itself can use ``vfork()``:
``unshare --setgid U --setuid U`` with no namespace named (``setgroups(0)``, ``setgid``,
``setuid``, exec: about 0.6 ms less per call than ``setpriv``, which resolves the ids through
NSS and loads its capability library), else ``setpriv`` where ``unshare`` is older than
those options. Where neither is installed, the spawner keeps ``user=``.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Callable, Sequence

__all__ = ["switched_argv"]

SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
"""Only the system's own folders: never a program found earlier on the platform's PATH."""

Switch = Callable[[str, str], list[str]]


def _by_unshare(program: str, ids: str) -> list[str]:
    return [program, "--setgid", ids, "--setuid", ids, "--"]


def _by_setpriv(program: str, ids: str) -> list[str]:
    return [program, "--reuid", ids, "--regid", ids, "--clear-groups", "--"]


def _unshare_switches(program: str) -> bool:
    """Whether this ``unshare`` has ``--setuid``/``--setgid`` (util-linux 2.35 and later)."""
    try:
        shown = subprocess.run(
            [program, "--help"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "--setuid" in shown and "--setgid" in shown


@functools.cache
def _switch() -> tuple[str, Switch] | None:
    unshare = shutil.which("unshare", path=SYSTEM_PATH)
    if unshare is not None and _unshare_switches(unshare):
        return unshare, _by_unshare
    setpriv = shutil.which("setpriv", path=SYSTEM_PATH)
    if setpriv is not None:
        return setpriv, _by_setpriv
    return None


def switched_argv(argv: Sequence[str], uid: int) -> list[str] | None:
    """``argv`` run as ``uid`` (gid the same, no supplementary groups) through util-linux;
    None when neither ``unshare`` nor ``setpriv`` can make the switch here."""
    found = _switch()
    if found is None:
        return None
    program, prefix = found
    return [*prefix(program, str(uid)), *argv]
