"""The workflow tool's `get` with `wait_seconds` waits for a run another process advances (a
CLI command while `corral serve` runs it): it answers when the run ends, not at once."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import event

import corral
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call
from tests.runtime.workflow_host_child import GATE

REPO = Path(__file__).resolve().parents[2]


async def test_get_waits_for_a_run_that_another_process_advances(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [call("gate", name=GATE)]}, {"text": "Gate passed."})
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.runtime.workflow_host_child",
        str(data_dir),
        model,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])},
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        workflow_id, run_id = (await child.stdout.readline()).decode().split()
        async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as cli:
            runs_read = asyncio.Event()
            loop = asyncio.get_running_loop()

            def seen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
                if "FROM runs" in statement:
                    loop.call_soon_threadsafe(runs_read.set)

            event.listen(cli.kernel.engine.sync_engine, "after_cursor_execute", seen)
            get = {"workflow_id": workflow_id, "run_id": run_id, "wait_seconds": 120}
            waiting = asyncio.create_task(cli.call_tool("workflow", {"get": get}))
            await runs_read.wait()  # this process has seen the run still at its gate
            child.stdin.write(b"open\n")
            await child.stdin.drain()
            result = await waiting
        assert result.data is not None, result.content
        shown = result.data["run"]
        assert shown["status"] == "finished", shown
        assert shown["answer"] == "Gate passed." and "wait_expired" not in shown
    finally:
        child.stdin.close()
        await child.wait()
