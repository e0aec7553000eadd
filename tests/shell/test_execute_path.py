"""Work the ``execute`` call path leaves out when it cannot change what the command gets.

Issue 39 item 1: the tool call must cost at most 1.5x bubblewrap's own floor. Each test here
runs real sandboxed calls and shows one piece of per-call work skipped where it cannot
matter, and still done where it can.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import corral
from corral.platform import Platform
from corral.shell import runner
from corral.shell import service as service_module
from corral.shell.check import check_command
from corral.shell.egress.ask import ApprovedHosts
from corral.shell.processes import start_time
from corral.shell.service import INLINE_MAX
from tests.shell.conftest import needs_bwrap, shells

pytestmark = needs_bwrap


@pytest.fixture
async def sandboxed(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, sandbox="bubblewrap") as platform:
        assert shells(platform).status.tier == "bubblewrap"
        yield platform


async def test_approved_hosts_are_looked_up_only_when_the_proxy_could_run(
    sandboxed: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = shells(sandboxed)
    looked_up: list[str] = []
    real = service.egress_approved.hosts

    async def hosts(user_id: str, agent: str) -> list[str]:
        looked_up.append(agent)
        return await real(user_id, agent)

    monkeypatch.setattr(service.egress_approved, "hosts", hosts)
    await sandboxed.admin.set_live("shell_network_mode", "off")
    result = await sandboxed.call_tool("execute", {"command": "true"})
    assert result.data is not None and result.data["network"] == "off"
    assert looked_up == []
    # Mode proxy with an empty policy: a host remembered for the agent would still open
    # the proxy, so the lookup stays.
    await sandboxed.admin.set_live("shell_network_mode", "proxy")
    result = await sandboxed.call_tool("execute", {"command": "true"})
    assert result.data is not None and result.data["network"] == "off"
    assert looked_up == ["default"]


async def test_only_a_background_shell_reads_its_process_start_time(
    sandboxed: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read right after the spawn, while bubblewrap may still be exec'ing, that read waits on
    # the exec; only a background shell, found again later by pid, needs it.
    read: list[int] = []

    def spy(pid: int) -> int | None:
        read.append(pid)
        return start_time(pid)

    monkeypatch.setattr(runner, "start_time", spy)
    result = await sandboxed.call_tool("execute", {"command": "true"})
    assert result.data is not None and result.data["exit_code"] == 0
    assert read == []
    started = await sandboxed.call_tool("execute", {"command": "sleep 30", "background": True})
    assert started.data is not None, started.text
    service = shells(sandboxed)
    record = await service.background.get(started.data["shell_id"])
    assert read == [record.pid] and record.pid_start is not None
    caller = await sandboxed.caller()
    await service.background.stop(record.id, caller)


class _Counting:
    """A session factory that counts the sessions opened for reading."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.opened = 0

    def __call__(self) -> Any:
        self.opened += 1
        return self.real()

    def begin(self) -> Any:
        return self.real.begin()


async def _network(platform: Platform) -> str:
    result = await platform.call_tool("execute", {"command": "true"})
    assert result.data is not None and result.data["exit_code"] == 0, result.text
    return str(result.data["network"])


async def test_kept_hosts_are_read_once_per_refresh_and_changes_made_here_apply_at_once(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with corral.open(data_dir, sandbox="bubblewrap", live_refresh_seconds=60) as platform:
        approved = shells(platform).egress_approved
        sessions = _Counting(approved._sessions)
        monkeypatch.setattr(approved, "_sessions", sessions)
        user = (await platform.caller()).user_id
        # Mode proxy (the default) with an empty policy: only a kept host opens the proxy.
        assert [await _network(platform) for _ in range(3)] == ["off"] * 3
        assert sessions.opened == 1
        await approved.remember(user, "default", "api.test", "decision-1")
        assert await _network(platform) == "proxy (egress policy)"
        assert await approved.forget(user, "default", "api.test")
        assert await _network(platform) == "off"
        # Another process's change is seen once the refresh time has passed, as a change of
        # the egress policy itself is.
        elsewhere = ApprovedHosts(sessions.real, fresh_seconds=60)
        await elsewhere.remember(user, "default", "api.test", "decision-2")
        assert await _network(platform) == "off"
        later = time.monotonic() + 61
        monkeypatch.setattr(approved, "_clock", lambda: later)
        assert await _network(platform) == "proxy (egress policy)"


async def test_a_short_command_without_a_glob_is_judged_on_the_loop(
    sandboxed: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hop to a worker thread cost more than judging ``true`` (0.35 ms of CPU a call);
    a glob (the gate may scan folders) and a long script still go off the loop."""
    judged: dict[str, bool] = {}
    real = check_command

    def spy(command: str, **kwargs: Any) -> Any:
        judged[command] = threading.get_ident() == loop_thread
        return real(command, **kwargs)

    monkeypatch.setattr(service_module, "check_command", spy)
    loop_thread = threading.get_ident()
    long = "true " + "&& true " * (INLINE_MAX // 8)
    for command in ("true", "ls *.txt", "echo [ab]", long):
        result = await sandboxed.call_tool("execute", {"command": command})
        assert result.data is not None and "exit_code" in result.data, result.text
    assert judged == {"true": True, "ls *.txt": False, "echo [ab]": False, long: False}
