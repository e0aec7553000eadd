"""Start-up recovery: a run whose process died is partial; a parked run stays answerable."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import corral
from corral.runtime.workers import worker_alive, worker_id
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call, kinds


def test_worker_liveness() -> None:
    assert worker_alive(worker_id())
    host = worker_id().split(":")[0]
    assert not worker_alive(f"{host}:999999999:1")
    assert not worker_alive(None)
    assert worker_alive("another-host:1:1")  # another host recovers its own runs


def chat_then_kill(data_dir: Path, model: str) -> list[str]:
    """Start `corral chat` in a process and kill it once its tool call is running."""
    env = {
        **os.environ,
        "CORRAL_DATA_DIR": str(data_dir),
        "CORRAL_PACKAGE_PATH": os.pathsep.join([str(DEMO), str(RTKIT)]),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "corral", "chat", "--model", model, "wait for it"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # the CLI prints the tool's live output as it comes
        seen.append(line)
        if "stdout: started" in line:
            break
    process.kill()
    process.wait(10)
    process.stdout.close()
    return seen


async def test_a_killed_process_leaves_its_run_partial_and_parked_runs_answerable(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    parked_model = write_script(
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]}, {"text": "written"}
    )
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        parked = await platform.chat("write", model=parked_model)
        assert parked.status == "parked"

    long_model = write_script({"text": "Waiting long.", "tool_calls": [call("wait", ms=600_000)]})
    seen = await asyncio.to_thread(chat_then_kill, data_dir, long_model)
    assert any("stdout: started" in line for line in seen), "".join(seen)

    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        rt = platform.runtime
        runs = {r.trigger + ":" + r.model: r for r in await rt.runs.list_runs()}
        cut = runs["user_message:" + long_model]
        assert (cut.status, cut.reason) == ("partial", "restart")
        assert "transcript is kept" in cut.detail
        rows = await rt.rows(cut.conversation_id)
        assert kinds(rows) == ["user_message", "model_turn", "tool_call", "card"]
        assert (await rt.conversations.get(cut.conversation_id)).active_run_id is None

        # The conversation goes on: the cut call reads as "no result", never as a lost pair.
        again = await platform.chat(
            "are you there?",
            conversation_id=cut.conversation_id,
            model=write_script({"text": "Yes."}, {"text": "Yes."}),
        )
        assert again.status == "finished"

        still = await rt.runs.get(parked.run_id)
        assert still.status == "parked"
        await platform.decide_approval(parked.approvals[0], "approve")
        assert (await rt.wait_run(parked.run_id)).status == "finished"


async def test_closing_the_platform_ends_its_running_runs_partial(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [call("wait", ms=600_000)]})
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        rt = platform.runtime
        conversation = await rt.start_conversation(model=model)
        async with rt.events.subscribe(conversation.id) as events:
            run = await rt.start_chat("wait", conversation_id=conversation.id)
            async for event in events:
                if event["type"] == "output":
                    break
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        ended = await platform.runtime.runs.get(run.id)
        assert (ended.status, ended.reason, ended.steps) == ("partial", "shutdown", 1)
        rows = await platform.runtime.rows(conversation.id)
        assert rows[-2].data["result"]["status"] == "stopped"  # what it captured is kept
