"""The shell service is built when first needed (issue 39, item 3): the sandbox is probed at
open, the service is built on its first use, or at open when a background shell is to be
recovered or its report delivered, and when the process serves."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import corral
from corral.errors import UsageError
from corral.platform import Platform
from corral.platform.shells_on_demand import ShellsOnDemand
from corral.shell.service import ShellService
from corral.tools.services import Deferred, Services, service_key
from tests.shell.conftest import FakeReports, dead, host_pids


def deferred_shells(platform: Platform) -> Deferred[ShellService]:
    return platform.services.deferred[service_key(ShellService)]


async def test_no_shell_to_recover_means_no_service_built_until_used(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert deferred_shells(platform).built is None
        assert isinstance(platform.services.shells, ShellsOnDemand)
        assert (data_dir / "sandbox" / "etc").is_dir()  # the sandbox was probed at open
        # A bad egress policy is refused without the service.
        with pytest.raises(UsageError, match="not a domain"):
            await platform.admin.set_live("egress", {"allowed_domains": ["exa mple.com"]})
        assert deferred_shells(platform).built is None
        verdict = await platform.check_command("ls")
        service = deferred_shells(platform).built
        assert service is not None and verdict.confinement == service.confinement
        assert platform.services.require(ShellService) is service
        assert platform.services.shells.background is service.background
        # Built late, it is what open built before: network mode proxy has its way out.
        assert service.egress_upstream is not None and service.egress_credentials is not None


async def test_first_lookup_builds_one_service(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        service = platform.services.get(ShellService)
        assert service is not None and deferred_shells(platform).built is service
        assert platform.services.shells.store is service.store
        assert platform.services.shells.checkpoints is service.checkpoints


async def test_serving_builds_the_service(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert deferred_shells(platform).built is None
        await platform.runtime.host()
        assert deferred_shells(platform).built is not None


async def test_a_shell_to_recover_builds_the_service_at_open(data_dir: Path) -> None:
    seconds = str(random.randrange(100_000, 999_999))  # no stray of an earlier run matches
    async with corral.open(data_dir, sandbox="unconfined") as first:
        result = await first.call_tool(
            "execute",
            {"command": f"sleep {seconds}", "background": True},
            conversation_id="conv-1",
        )
        assert result.status == "ok", result.text
        assert result.data is not None
        shell_id = result.data["shell_id"]
        pids = host_pids(f"sleep {seconds}")
        assert pids
    # Closing ended the shell; its report waits for the next start.
    assert all(dead(pid) for pid in pids)
    sink = FakeReports()
    async with corral.open(
        data_dir, sandbox="unconfined", services=Services(reports=sink)
    ) as again:
        service = deferred_shells(again).built
        assert service is not None  # built at open, before anything asked for it
        record = await service.background.get(shell_id)
    assert record.status == "lost" and record.report_state == "reported"
    assert [r["source_id"] for r in sink.reports] == [shell_id]
    # Nothing is left to recover: the next open builds nothing.
    async with corral.open(data_dir, sandbox="unconfined") as third:
        assert deferred_shells(third).built is None
