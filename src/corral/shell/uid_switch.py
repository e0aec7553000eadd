"""Starting bubblewrap as the sandbox uid without forking the platform's whole memory.

``subprocess`` switches uid with ``user=``/``group=``/``extra_groups=`` only in a child made
by a full ``fork()`` (CPython refuses ``vfork()`` when it must set ids), and a full fork of
the platform (about 150 MB mapped) costs around 10 ms before the child even execs, then
copy-on-write faults in the parent. util-linux ``setpriv`` makes the same switch (real,
effective and saved uid and gid, no supplementary groups, capabilities cleared by the kernel
as for ``user=``) and then execs the command, so the spawn itself can use ``vfork()``.
Where ``setpriv`` is not installed, the spawner keeps ``user=``.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Sequence

__all__ = ["setpriv_argv"]

SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
"""Only the system's own folders: never a ``setpriv`` found earlier on the platform's PATH."""


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv", path=SYSTEM_PATH)


def setpriv_argv(argv: Sequence[str], uid: int) -> list[str] | None:
    """``argv`` run as ``uid`` (gid the same, no supplementary groups) through ``setpriv``;
    None when ``setpriv`` is not installed."""
    setpriv = _setpriv()
    if setpriv is None:
        return None
    ids = str(uid)
    return [setpriv, "--reuid", ids, "--regid", ids, "--clear-groups", "--", *argv]
