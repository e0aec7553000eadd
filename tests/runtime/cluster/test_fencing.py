"""Fencing: a worker that pauses past a takeover cannot store anything more for the run.

Worker A, on "another machine" (a UTS namespace of its own, so this host cannot see that it
lives), is SIGSTOPped in the middle of a call; worker B takes the run over, answers the call
``interrupted`` and finishes the run. A is resumed and its call returns: its result is
refused because the run's lease moved on, and A lets the run go."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from pathlib import Path

from sqlalchemy import text

import corral
from tests.runtime.cluster.conftest import Cluster, call, eventually, read_started

REFUSED = "a write was refused, another worker holds it now"


def _open_gate(gate: Path) -> None:
    # Pairs with the worker's open() of the gate (it may have been paused before it got
    # there); the call then reads end-of-file and returns.
    with gate.open("w"):
        pass


async def test_a_paused_worker_resumed_after_a_takeover_stores_nothing(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    started, gate = cluster.fifo("started"), cluster.fifo("gate")
    model = cluster.script(
        {"tool_calls": [call("checkin", fifo=str(started), gate=str(gate))]},
        {"text": "Carried on elsewhere.", "when_result_contains": "interrupted"},
    )
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        paused = cluster.start_worker(hostname="elsewhere")
        run = await rt.start_chat("check in", model=model)
        await read_started(started)
        lease_before = (await rt.runs.get(run.id)).lease
        paused.send_signal(signal.SIGSTOP)
        cluster.start_worker()
        settled = await cluster.settled(rt, run.id, 120)
        assert settled.status == "finished", cluster.logs()
        assert settled.lease == lease_before + 1

        opening = asyncio.ensure_future(asyncio.to_thread(_open_gate, gate))
        paused.send_signal(signal.SIGCONT)
        try:
            await asyncio.wait_for(asyncio.shield(opening), 30)
        except TimeoutError:
            os.close(os.open(gate, os.O_RDONLY | os.O_NONBLOCK))  # free the opening thread
            await opening
            raise AssertionError(
                f"the resumed worker never reached the gate\n{cluster.logs()}"
            ) from None

        async def refused_or_doubled() -> str | None:
            rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
            if sum(1 for r in rows if r.kind == "tool_result") > 1:
                return "doubled"
            return "refused" if REFUSED in cluster.logs() else None

        seen = await eventually(refused_or_doubled, within=60)

        async def registered_again() -> bool | None:
            # The sweep removed it while it was paused; it registers again and works on.
            if paused.poll() is not None:
                return False
            async with platform.kernel.sessions() as session:
                workers = await session.scalar(text("SELECT count(*) FROM procrastinate_workers"))
            return True if workers == 2 else None

        lives_on = await eventually(registered_again, within=60)
        rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
        final = await rt.runs.get(run.id)
    calls = Counter(r.call_id for r in rows if r.kind == "tool_call")
    results = Counter(r.call_id for r in rows if r.kind == "tool_result")
    assert seen == "refused", cluster.logs()
    assert results == calls == {next(iter(calls)): 1}
    result = next(r.data["result"] for r in rows if r.kind == "tool_result")
    assert result["error_code"] == "interrupted"
    assert final.status == "finished" and final.worker == settled.worker
    assert lives_on and paused.poll() is None, cluster.logs()
