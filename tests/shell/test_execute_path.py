"""Work the ``execute`` call path leaves out when it cannot change what the command gets.

Issue 39 item 1: the tool call must cost at most 1.5x bubblewrap's own floor. Each test here
runs real sandboxed calls and shows one piece of per-call work skipped where it cannot
matter, and still done where it can.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral.platform import Platform
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
