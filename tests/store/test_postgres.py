"""The same platform on PostgreSQL: a real server started for this test session."""

from __future__ import annotations

from pathlib import Path

import corral
from tests.conftest import DEMO


async def test_platform_runs_on_postgresql(data_dir: Path, database_url: str) -> None:
    async with corral.open(data_dir, database_url=database_url, package_paths=[DEMO]) as first:
        assert (await first.caller()).role == "owner"
        assert not (data_dir / "corral.db").exists()
        result = await first.call_tool("echo", {"text": "on postgres"})
        assert result.text == "on postgres"
        parked = await first.call_tool("write_note", {"path": "pg.md", "text": "x"}, profile="safe")
        approval_id = parked.data["approval_id"]  # type: ignore[index]
        await first.admin.set_live("perf_slow_tool_ms", 4321)
    async with corral.open(data_dir, database_url=database_url, package_paths=[DEMO]) as second:
        assert (await second.live_settings())["perf_slow_tool_ms"] == 4321
        await second.decide_approval(approval_id, "approve")
        approved = await second.approval_result(approval_id)
        assert approved is not None and not approved.is_error
    assert (data_dir / "drive" / "pg.md").read_text() == "note:x"


async def test_live_settings_cross_instances_on_postgresql(
    data_dir: Path, database_url: str
) -> None:
    async with (
        corral.open(data_dir, database_url=database_url, live_refresh_seconds=0) as writer,
        corral.open(data_dir, database_url=database_url, live_refresh_seconds=0) as reader,
    ):
        await writer.admin.set_live("tool_result_content_cap", 9999)
        assert (await reader.live_settings())["tool_result_content_cap"] == 9999
