"""The sandbox uid switch through util-linux: the same identity as ``user=``, without a fork.

As root, bubblewrap runs as the sandbox uid on the host. ``subprocess``'s ``user=`` makes
that switch only in a full ``fork()`` of the platform's memory; ``unshare --setuid`` (or
``setpriv``) makes it after a ``vfork()``. These run real processes and compare what the
kernel reports for each.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from typing import Any

import pytest

from corral.shell import runner, uid_switch
from corral.shell.runner import ProcessSpec, spawn_process
from corral.shell.uid_switch import switched_argv

UID = 65534
CREDENTIALS = ("Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapAmb:")
STATUS = ["grep", "-E", "^(" + "|".join(CREDENTIALS) + ")", "/proc/self/status"]

as_root_with_util_linux = pytest.mark.skipif(
    os.geteuid() != 0 or switched_argv([], UID) is None,
    reason="the switch needs root and util-linux unshare or setpriv",
)


def _program(name: str) -> str:
    found = shutil.which(name, path=uid_switch.SYSTEM_PATH)
    if found is None or (name == "unshare" and not uid_switch._unshare_switches(found)):
        pytest.skip(f"no {name} here that can switch uid")
    return found


@as_root_with_util_linux
@pytest.mark.parametrize(
    ("name", "prefix"), [("unshare", uid_switch._by_unshare), ("setpriv", uid_switch._by_setpriv)]
)
def test_each_switch_gives_the_identity_user_gives(name: str, prefix: uid_switch.Switch) -> None:
    by_subprocess = subprocess.run(
        STATUS, user=UID, group=UID, extra_groups=[], capture_output=True, text=True, check=True
    ).stdout
    switched = [*prefix(_program(name), str(UID)), *STATUS]
    by_switch = subprocess.run(switched, capture_output=True, text=True, check=True).stdout
    assert by_switch == by_subprocess
    rows = dict(line.split(":", 1) for line in by_switch.splitlines())
    assert rows["Uid"].split() == [str(UID)] * 4 and rows["Gid"].split() == [str(UID)] * 4
    assert rows["Groups"].strip() == "" and int(rows["CapEff"], 16) == 0


@as_root_with_util_linux
def test_the_switch_goes_through_unshare_which_costs_less_than_setpriv() -> None:
    unshare = _program("unshare")
    ids = str(UID)
    assert switched_argv(["true"], UID) == [unshare, "--setgid", ids, "--setuid", ids, "--", "true"]


@as_root_with_util_linux
async def test_a_sandboxed_spawn_switches_uid_without_forcing_a_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, Any]] = []
    real = runner.exec_child

    async def spy(argv: list[str], **options: Any) -> asyncio.subprocess.Process:
        seen.append({"argv": tuple(argv), **options})
        return await real(argv, **options)

    monkeypatch.setattr(runner, "exec_child", spy)
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
