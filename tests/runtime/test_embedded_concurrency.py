"""The embedded default advances many runs at once on SQLite without a lock error."""

from __future__ import annotations

import asyncio
import logging

import pytest

from corral.live_settings import LIVE_SETTINGS
from corral.platform import Platform
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import ScriptWriter, call, kinds


async def test_the_default_concurrency_advances_its_runs_at_once_without_lock_errors(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    slots = int(LIVE_SETTINGS["runs_max_concurrent"].default)
    assert slots >= 30  # measured: bench/embedded_concurrency.py
    # Every run's first call waits until `slots` runs reached it: only runs advanced at once
    # meet, so with fewer slots none would finish. Then two steps of concurrent writes.
    model = write_script(
        {"tool_calls": [call("meet", group="all", parties=slots)]},
        *({"tool_calls": [call("echo", text=f"step {i}")]} for i in range(2)),
        {"text": "done"},
    )
    runs = [await rt.start_chat(f"run {i}", model=model) for i in range(slots)]
    ended = await asyncio.wait_for(asyncio.gather(*(rt.wait_run(r.id) for r in runs)), 120)
    assert [run.status for run in ended] == ["finished"] * len(runs)
    for run in runs:
        rows = await rt.rows(run.conversation_id)
        assert kinds(rows).count("tool_result") == 3
    assert "locked" not in caplog.text.lower()
