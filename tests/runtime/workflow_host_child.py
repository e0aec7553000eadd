"""A child process for the cross-process wait test: it hosts a platform (as `corral serve`
does), runs a workflow whose turn stops at a gate, says the run id on stdout, and opens the
gate when a line arrives on stdin; then it keeps hosting until stdin closes.

    python -m tests.runtime.workflow_host_child DATA_DIR MODEL
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import corral
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, gate

GATE = "elsewhere"


async def main(data_dir: Path, model: str) -> None:
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        await platform.runtime.host()
        setup = {"title": "Elsewhere", "instruction": "Pass the gate.", "model": model}
        created = await platform.call_tool("workflow", {"set": setup})
        assert created.data is not None, created.content
        workflow_id = created.data["workflow"]["workflow_id"]
        started = await platform.call_tool("workflow", {"run": {"workflow_id": workflow_id}})
        assert started.data is not None, started.content
        print(workflow_id, started.data["run"]["run_id"], flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.readline)
        gate(platform, GATE).set()
        await loop.run_in_executor(None, sys.stdin.read)  # host until the test is done


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
