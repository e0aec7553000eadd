"""Approvals in the loop: a run parks, holds nothing, and resumes exactly where it stood."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import corral
from corral.errors import UsageError
from corral.platform import Platform
from corral.runtime.runtime import Runtime
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call, gate, kinds

WRITE = call("write_note", path="data://note.md", text="hello")
AFTER = [
    {"when_result_contains": "denied", "text": "I was not allowed, so I left it."},
    {"when_result_contains": "wrote", "text": "The note is written."},
]


async def test_parked_run_survives_a_restart_and_finishes_when_approved(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Writing.", "tool_calls": [call("echo", text="a"), WRITE]}, AFTER)
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        turn = await platform.chat("write a note", model=model, profile="balanced")
        assert turn.status == "parked" and len(turn.approvals) == 1
        assert [w.tool for w in turn.waiting] == ["write_note"]
        assert not (data_dir / "drive" / "note.md").exists()
        assert (await platform.runtime.runs.get(turn.run_id)).status == "parked"
        # Nothing is held open: no job of this process waits for the answer.
        async with asyncio.timeout(10):
            await platform.runtime.jobs.idle()
        assert not platform.runtime.live
        cards = [r.data["card"] for r in turn.rows if r.kind == "card"]
        assert cards == ["waiting"]
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        rt = platform.runtime
        run = await rt.runs.get(turn.run_id)
        assert run.status == "parked"  # start-up recovery leaves a parked run answerable
        decided = await platform.decide_approval(turn.approvals[0], "approve")
        # Deciding only records the answer: the run's own job runs the call.
        assert decided.status == "pending" and turn.run_id in decided.text
        final = await rt.wait_run(turn.run_id)
        assert (final.status, final.steps) == ("finished", 2)
        result = await platform.approval_result(turn.approvals[0])
        assert result is not None and result.text == "wrote data://note.md"
        done = await rt.result(turn.run_id)
        assert done.text == "The note is written."
    assert (data_dir / "drive" / "note.md").read_text() == "note:hello"
    order = kinds(done.rows)
    assert order[:4] == ["user_message", "model_turn", "tool_call", "tool_call"]
    # The echo result and the waiting card come as the two calls end, in either order.
    assert sorted(order[4:6]) == ["card", "tool_result"]
    assert order[6:] == ["card", "tool_result", "model_turn", "card"]  # decided … run_ended


async def test_deny_continues_with_the_refusal(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, data_dir: Path
) -> None:
    turn = await rt_platform.chat("write", model=write_script({"tool_calls": [WRITE]}, AFTER))
    assert turn.status == "parked"
    denied = await rt_platform.decide_approval(turn.approvals[0], "deny", note="not today")
    assert denied.status == "denied" and "not today" in denied.text
    final = await rt.wait_run(turn.run_id)
    assert final.status == "finished"
    done = await rt.result(turn.run_id)
    assert done.text == "I was not allowed, so I left it."
    result = [r for r in done.rows if r.kind == "tool_result"][-1].data["result"]
    assert result["error_code"] == "approval_denied"
    assert not (data_dir / "drive" / "note.md").exists()


async def test_a_decision_during_the_turn_is_found_when_it_parks(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    # write_note parks at once; the gate keeps the turn running until the test opens it.
    model = write_script({"tool_calls": [WRITE, call("gate", name="g")]}, AFTER)
    conversation = await rt.start_conversation(model=model)
    async with rt.events.subscribe(conversation.id) as events:
        run = await rt.start_chat("write", conversation_id=conversation.id)
        async for event in events:
            if event["type"] == "row" and event["row"]["data"].get("card") == "waiting":
                break
    assert (await rt.runs.get(run.id)).status == "running"
    pending = await rt_platform.pending_approvals()
    await rt_platform.decide_approval(pending[0].id, "approve")
    gate(rt_platform, "g").set()
    final = await rt.wait_run(run.id)
    assert final.status == "finished"
    assert (await rt.result(run.id)).text == "The note is written."


async def test_a_run_that_ends_closes_its_open_approvals(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("write", model=write_script({"tool_calls": [WRITE]}, AFTER))
    stopped = await rt.stop(turn.run_id)
    assert stopped.status == "stopped"
    record = await rt_platform.approvals.get(turn.approvals[0])
    assert record.status == "closed" and "stopped" in (record.note or "")
    with pytest.raises(UsageError, match="already closed"):
        await rt_platform.decide_approval(turn.approvals[0], "approve")
    assert (await rt.conversations.get(turn.conversation_id)).active_run_id is None


async def test_a_parked_run_keeps_the_conversation_busy(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("write", model=write_script({"tool_calls": [WRITE]}, AFTER))
    with pytest.raises(UsageError, match="parked on approval"):
        await rt_platform.chat("something else", conversation_id=turn.conversation_id)


async def test_a_resumed_run_adopts_a_stricter_profile_only(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [WRITE]}, {"tool_calls": [WRITE]}, {"text": "ok"})
    turn = await rt_platform.chat("write twice", model=model, profile="balanced")
    await rt.conversations.update(turn.conversation_id, profile="auto")  # looser: ignored
    await rt_platform.decide_approval(turn.approvals[0], "approve")
    again = await rt.wait_run(turn.run_id)
    assert again.status == "parked" and again.profile == "balanced"
    await rt.conversations.update(turn.conversation_id, profile="safe")  # stricter: adopted
    await rt_platform.decide_approval(again.waiting[0].id, "approve")
    final = await rt.wait_run(turn.run_id)
    assert final.status == "finished" and final.profile == "safe"


def test_an_approval_decided_by_a_second_process_resumes_the_run(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"tool_calls": [WRITE]}, AFTER)
    env = {
        **os.environ,
        "CORRAL_DATA_DIR": str(data_dir),
        "CORRAL_PACKAGE_PATH": os.pathsep.join([str(DEMO), str(RTKIT)]),
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "corral", *args], capture_output=True, text=True, env=env
        )

    chat = cli("chat", "--model", model, "--json", "write a note")
    assert chat.returncode == 3, chat.stderr  # parked
    parked = json.loads(chat.stdout)
    approval = parked["waiting"][0]["id"]
    decided = cli("approvals", "decide", approval, "approve", "--json")
    assert decided.returncode == 0, decided.stderr
    outcome = json.loads(decided.stdout)
    assert outcome["content"][0]["text"] == "wrote data://note.md"
    assert outcome["run"]["status"] == "finished"
    shown = json.loads(cli("conversations", "show", parked["conversation_id"], "--json").stdout)
    texts = [r["data"].get("text") for r in shown["rows"] if r["kind"] == "model_turn"]
    assert texts[-1] == "The note is written."
    assert (data_dir / "drive" / "note.md").read_text() == "note:hello"
