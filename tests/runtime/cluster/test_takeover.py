"""A worker SIGKILLed in the middle of a run: another worker takes the run over from its
last persisted step, and the call that was cut off is reported, never silently re-run."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

from sqlalchemy import update

import corral
from corral.runtime.timeline import TimelineRow
from corral.store import runtime_tables as rt_tables
from tests.runtime.cluster.conftest import Cluster, call, read_started


async def test_a_run_killed_at_step_10_finishes_on_a_second_worker(cluster: Cluster) -> None:
    hold_pipe, again_pipe = cluster.fifo("hold"), cluster.fifo("again")
    marker = cluster.root / "again.marker"
    turns: list[dict[str, object]] = [
        {"tool_calls": [call("echo", text=f"step {i}")]} for i in range(1, 10)
    ]
    turns.append(
        {
            "text": "Step 10 holds.",
            "tool_calls": [
                call("hold", fifo=str(hold_pipe)),
                call("hold_idempotent", fifo=str(again_pipe), marker=str(marker)),
            ],
        }
    )
    turns += [{"tool_calls": [call("echo", text=f"step {i}")]} for i in range(11, 30)]
    turns.append({"text": "All 30 steps done."})
    model = cluster.script(*turns)
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        cluster.ensure_workers(2)
        run = await rt.start_chat("take 30 steps", model=model)
        await read_started(hold_pipe)
        await read_started(again_pipe)
        before = await rt.conversations.rows(run.conversation_id, run_id=run.id)
        assert _count(before, "model_turn") == 10
        first = cluster.worker_of((await rt.runs.get(run.id)).worker)
        first.kill()
        first.wait()
        settled = await cluster.settled(rt, run.id, 120)
        rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
    assert settled.status == "finished", cluster.logs()
    assert settled.steps == 30
    assert settled.worker is not None and str(first.pid) not in settled.worker.split(":")
    assert _count(rows, "model_turn") == 30
    calls = Counter(r.call_id for r in rows if r.kind == "tool_call")
    results = Counter(r.call_id for r in rows if r.kind == "tool_result")
    assert len(calls) == 30 and set(calls.values()) == {1}
    assert results == calls  # every call answered exactly once
    by_tool = {r.data["tool"]: r.data["result"] for r in rows if r.kind == "tool_result"}
    assert by_tool["hold"]["error_code"] == "interrupted"
    assert "may have partly happened" in by_tool["hold"]["content"][0]["text"]
    assert by_tool["hold_idempotent"]["content"][0]["text"] == "ran again after a takeover"
    assert rows[-2].kind == "model_turn" and rows[-2].data["text"] == "All 30 steps done."


def _count(rows: list[TimelineRow], kind: str) -> int:
    return sum(1 for r in rows if r.kind == kind)


async def test_a_worker_stopped_with_sigterm_hands_its_run_over(cluster: Cluster) -> None:
    pipe = cluster.fifo("handover")
    model = cluster.script(
        {"tool_calls": [call("hold", fifo=str(pipe))]},
        {"text": "Carried on elsewhere.", "when_result_contains": "interrupted"},
    )
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        cluster.ensure_workers(2)
        run = await rt.start_chat("hold, then carry on", model=model)
        await read_started(pipe)
        leaving = cluster.worker_of((await rt.runs.get(run.id)).worker)
        cluster.stop_worker(leaving)  # SIGTERM: grace, then the run is handed over
        settled = await cluster.settled(rt, run.id, 60)
        result = await rt.result(run.id)
        rows = await rt.conversations.rows(run.conversation_id, run_id=run.id)
    assert leaving.returncode is not None
    assert settled.status == "finished", cluster.logs()
    assert settled.worker is not None and str(leaving.pid) not in settled.worker.split(":")
    hold = next(r.data["result"] for r in rows if r.kind == "tool_result")
    assert hold["error_code"] == "interrupted"
    assert "Carried on elsewhere." in result.text


async def test_a_run_whose_final_answer_was_stored_is_not_asked_again(cluster: Cluster) -> None:
    """The worker died after storing the final answer, before storing that the run ended:
    the run that takes over ends it finished, with no further model turn."""
    model = cluster.script(
        {"tool_calls": [call("echo", text="one")]}, {"text": "The answer."}, final_text="Again?"
    )
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        cluster.ensure_workers(1)
        done = await rt.chat("answer once", model=model)
        assert done.status == "finished", cluster.logs()
        dead = f"{socket.gethostname()}:{_unused_pid()}:-"
        async with platform.kernel.sessions.begin() as session:
            await session.execute(
                update(rt_tables.Run)
                .where(rt_tables.Run.id == done.run_id)
                .values(status="running", worker=dead, ended_at=None)
            )
        rt.jobs.submit(done.run_id)
        settled = await cluster.settled(rt, done.run_id, 60)
        rows = await rt.conversations.rows(done.conversation_id, run_id=done.run_id)
    assert settled.status == "finished" and settled.worker != dead, cluster.logs()
    assert [r.data["text"] for r in rows if r.kind == "model_turn"] == ["", "The answer."]


def _unused_pid() -> int:
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid += 1
    return pid
