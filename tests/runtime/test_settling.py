"""Jobs settle before they announce: whoever wakes on a settled run finds its job gone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from corral.platform import Platform
from corral.runtime.host import SETTLED
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import ScriptWriter, call

WRITE = call("write_note", path="data://note.md", text="hello")
LONG = call("wait", ms=120_000)


async def _pending_when_settled(rt: Runtime, run_id: str) -> tuple[str, int]:
    """What a board waiter (``wait_run``, a chat turn) sees the moment it wakes."""
    status = await rt.board.wait_until(run_id, SETTLED)
    return status, rt.jobs.pending


@pytest.mark.parametrize(
    ("turn", "settled"),
    [
        # Ended by the loop, then wakes the conversation.
        pytest.param({"text": "Done."}, "finished", id="finished"),
        # Parked, then checked for answers that came while it parked.
        pytest.param({"tool_calls": [WRITE]}, "parked", id="parked"),
        # Stopped while a call runs.
        pytest.param({"text": "Waiting.", "tool_calls": [LONG]}, "stopped", id="stopped"),
    ],
)
async def test_a_run_has_left_the_runner_when_its_settled_status_is_announced(
    rt_platform: Platform,
    rt: Runtime,
    write_script: ScriptWriter,
    turn: dict[str, Any],
    settled: str,
) -> None:
    conversation = await rt.start_conversation(model=write_script(turn))
    stopping: asyncio.Task[object] | None = None
    async with rt.events.subscribe(conversation.id) as events:
        run = await rt.start_chat("go", conversation_id=conversation.id)
        board = asyncio.create_task(_pending_when_settled(rt, run.id))
        async for event in events:
            if event["type"] == "output" and event["text"] == "started":
                stopping = asyncio.create_task(rt.stop(run.id))
            if event["type"] == "run" and event["status"] in SETTLED:
                # An event reader wakes here; the job that announced this must be gone.
                read = (event["status"], rt.jobs.pending)
                break
    assert read == (settled, 0)
    assert await board == (settled, 0)
    if stopping is not None:
        await stopping
    assert (await rt.runs.get(run.id)).status == settled
    await rt.jobs.wait(run.id)
    await rt.jobs.idle()
