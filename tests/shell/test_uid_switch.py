"""The sandbox uid switch through ``setpriv``: the same identity as ``user=``, without a fork.

As root, bubblewrap runs as the sandbox uid on the host. ``subprocess``'s ``user=`` makes
that switch only in a full ``fork()`` of the platform's memory; ``setpriv`` makes it after a
``vfork()``. These run real processes and compare what the kernel reports for each.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from typing import Any

import pytest

from corral.shell import runner
from corral.shell.runner import ProcessSpec, spawn_process
from corral.shell.uid_switch import setpriv_argv

UID = 65534
CREDENTIALS = ("Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapAmb:")
STATUS = ["grep", "-E", "^(" + "|".join(CREDENTIALS) + ")", "/proc/self/status"]

as_root_with_setpriv = pytest.mark.skipif(
    os.geteuid() != 0 or setpriv_argv([], UID) is None,
    reason="the switch needs root and util-linux setpriv",
)


@as_root_with_setpriv
def test_setpriv_gives_the_identity_user_gives() -> None:
    by_subprocess = subprocess.run(
        STATUS, user=UID, group=UID, extra_groups=[], capture_output=True, text=True, check=True
    ).stdout
    switched = setpriv_argv(STATUS, UID)
    assert switched is not None
    by_setpriv = subprocess.run(switched, capture_output=True, text=True, check=True).stdout
    assert by_setpriv == by_subprocess
    rows = dict(line.split(":", 1) for line in by_setpriv.splitlines())
    assert rows["Uid"].split() == [str(UID)] * 4 and rows["Gid"].split() == [str(UID)] * 4
    assert rows["Groups"].strip() == "" and int(rows["CapEff"], 16) == 0


@as_root_with_setpriv
async def test_a_sandboxed_spawn_switches_uid_without_forcing_a_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, Any]] = []
    real = asyncio.create_subprocess_exec

    async def spy(*argv: str, **options: Any) -> asyncio.subprocess.Process:
        seen.append({"argv": argv, **options})
        return await real(*argv, **options)

    monkeypatch.setattr(runner.asyncio, "create_subprocess_exec", spy)
    spec = ProcessSpec(argv=STATUS, env={}, cwd="/", sandboxed=True, run_as=UID)
    process = await spawn_process(spec)
    out, _ = await process.communicate()
    assert process.returncode == 0
    rows = dict(line.split(":", 1) for line in out.decode().splitlines())
    assert rows["Uid"].split() == [str(UID)] * 4 and rows["Groups"].strip() == ""
    # Nothing that makes CPython fall back from vfork() to a full fork of the platform.
    (call,) = seen
    assert call["user"] is None and call["group"] is None and call["extra_groups"] is None
    assert call["preexec_fn"] is None
    assert call["argv"][-len(STATUS) :] == tuple(STATUS)
