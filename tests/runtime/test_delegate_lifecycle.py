"""delegate runs through crashes, parallel parking and report-back switched off."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

from sqlalchemy import select

import corral
from corral.platform import Platform
from corral.runtime.delegation import Delegation
from corral.runtime.runtime import Runtime
from corral.store import delegation_tables as dt
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call
from tests.runtime.test_delegate import delegate_results

CRASHING_PARENT = textwrap.dedent(
    """
    import asyncio, sys
    import corral

    async def main():
        paths = sys.argv[2].split("|")
        async with corral.open(sys.argv[1], package_paths=paths) as platform:
            turn = await platform.chat("go", model=sys.argv[3], profile="auto")
            result = next(r for r in turn.rows if r.kind == "tool_result")
            data = result.data["result"]["data"]
            rt = platform.runtime
            async with rt.events.subscribe(data["conversation_id"]) as events:
                rows = await rt.conversations.rows(data["conversation_id"])
                if not any(r.kind == "tool_call" for r in rows):
                    async for event in events:
                        if event["type"] == "output":
                            break
            print(data["run_id"], turn.conversation_id, data["status_uri"], flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())
    """
)


async def test_a_crash_ends_a_running_background_child_partial_and_it_reports(
    data_dir: Path, tmp_path: Path, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"text": "Begun the long part.", "tool_calls": [call("gate", name="never")]},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, background=True)]},
        {"text": "Detached."},
        {"when_message_contains": "Begun the long part.", "text": "It was cut by a crash."},
    )
    script = tmp_path / "parent.py"
    script.write_text(CRASHING_PARENT)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(data_dir),
        f"{DEMO}|{RTKIT}",
        parent,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert process.stdout is not None
    line = (await asyncio.wait_for(process.stdout.readline(), 120)).decode().split()
    assert len(line) == 3, line
    child_run_id, conversation_id, status_uri = line
    process.send_signal(signal.SIGKILL)
    await process.wait()
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        rt = platform.runtime
        child_run = await rt.runs.get(child_run_id)
        assert (child_run.status, child_run.reason) == ("partial", "restart")
        rows = await rt.conversations.rows(child_run.conversation_id)
        assert [r.kind for r in rows][:3] == ["user_message", "model_turn", "tool_call"]
        await rt.wait_idle(conversation_id)
        report = next(r for r in await rt.rows(conversation_id) if r.kind == "background_report")
        assert "partial" in report.data["title"]
        assert report.data["text"].startswith("Partial answer")
        last = (await rt.runs.list_runs(conversation_id=conversation_id, limit=1))[0]
        assert (await rt.result(last.id)).text == "It was cut by a crash."
    meta = data_dir / "drive" / status_uri.removeprefix("data://")
    assert json.loads(meta.read_text())["status"] == "partial"


async def test_several_children_park_and_resume_independently(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    def writer(name: str) -> str:
        return write_script(
            {"tool_calls": [call("write_note", path=f"data://{name}.md", text=name)]},
            {"when_result_contains": "wrote", "text": f"{name} written."},
            name=name,
        )

    parent = write_script(
        {
            "tool_calls": [
                call("delegate", task="a", model=writer("a")),
                call("delegate", task="b", model=writer("b")),
            ]
        },
        [
            {"when_result_contains": "a written.", "text": "Both written."},
            {"text": "Something is missing."},
        ],
    )
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        rt = platform.runtime
        turn = await platform.chat("go", model=parent, profile="balanced")
        assert turn.status == "parked" and len(turn.approvals) == 2  # both delegate calls
        for approval in turn.approvals:
            await platform.decide_approval(approval, "approve")
        # The parent's job runs both approved delegate calls; both children park.
        waits = (await rt.wait_run(turn.run_id)).waiting
        assert sorted(w.kind for w in waits) == ["delegate", "delegate"]
        children = {w.id: await rt.runs.get(w.id) for w in waits}
        by_task = {}
        async with platform.sessions() as session:
            for delegation in await session.scalars(select(dt.Delegation)):
                by_task[delegation.task] = delegation.conversation_id
        a, b = (next(r for r in children.values() if r.conversation_id == by_task[t]) for t in "ab")
        await platform.decide_approval(b.waiting[0].id, "approve")
        assert (await rt.wait_run(b.id)).status == "finished"
        assert (await rt.runs.get(turn.run_id)).status == "parked"  # a still works
        answered = [
            r["data"]["run_id"] for r in delegate_results(await rt.rows(turn.conversation_id))
        ]
        assert answered == [b.id]
        await platform.decide_approval(a.waiting[0].id, "approve")
        assert (await rt.wait_run(a.id)).status == "finished"
        assert (await rt.wait_run(turn.run_id)).status == "finished"
        results = delegate_results((await rt.result(turn.run_id)).rows)
        assert {r["data"]["status"] for r in results} == {"finished"}
    assert (data_dir / "drive" / "a.md").exists() and (data_dir / "drive" / "b.md").exists()


async def test_with_report_back_off_the_answer_stays_in_the_transcript(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, data_dir: Path
) -> None:
    await rt_platform.admin.set_live("delegate_report_back", False)
    child = write_script({"text": "Quiet answer."}, name="child")
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, background=True)]},
        {"text": "Detached."},
    )
    turn = await rt_platform.chat("go", model=parent, profile="auto")
    (started,) = delegate_results(turn.rows)
    assert (await rt.wait_run(started["data"]["run_id"])).status == "finished"
    await rt.wait_idle(turn.conversation_id)
    assert "background_report" not in [r.kind for r in await rt.rows(turn.conversation_id)]
    transcript = data_dir / "drive" / started["data"]["transcript_uri"][len("data://") :]
    assert "Quiet answer." in transcript.read_text()
    (listed,) = await rt_platform.services.require(Delegation).list_delegates(turn.conversation_id)
    assert listed["status"] == "finished"


async def test_disabled_packages_union_down_the_generations(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    grandchild = write_script(
        {"tool_calls": [call("gate", name="g"), call("echo", text="x")]},
        {"text": "grandchild done"},
        name="grandchild",
    )
    child = write_script(
        {"tool_calls": [call("delegate", task="g", model=grandchild, disabled_packages=["demo"])]},
        {"text": "child done"},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="c", model=child, disabled_packages=["rtkit"])]},
        {"text": "parent done"},
    )
    turn = await rt_platform.chat("go", model=parent, profile="auto")
    assert turn.text == "parent done"
    async with rt_platform.sessions() as session:
        delegations = {
            d.task: d.conversation_id for d in await session.scalars(select(dt.Delegation))
        }
    (child_run,) = await rt.runs.list_runs(conversation_id=delegations["c"])
    (grandchild_run,) = await rt.runs.list_runs(conversation_id=delegations["g"])
    assert child_run.narrowing.disabled_packages == {"rtkit"}
    assert grandchild_run.narrowing.disabled_packages == {"rtkit", "demo"}
    rows = await rt.conversations.rows(delegations["g"])
    refused = [r.data["result"]["error_code"] for r in rows if r.kind == "tool_result"]
    assert refused == ["not_visible", "not_visible"]  # gate (rtkit) and echo (demo) are off


async def test_a_later_turn_of_a_subagent_conversation_keeps_its_narrowing(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"text": "first"},
        {"tool_calls": [call("sync_echo", n=1)]},
        {"text": "second"},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="c", model=child, tools=["echo"])]},
        {"text": "done"},
        {"text": "again"},
    )
    turn = await rt_platform.chat("go", model=parent, profile="auto")
    (result,) = delegate_results(turn.rows)
    child_conversation = result["data"]["conversation_id"]
    assert rt.reports is not None
    await rt.reports.queue_report(
        conversation_id=child_conversation,
        user_id=turn.rows[0].user_id or "",
        source="shell",
        source_id="sh_1",
        title="A shell of the subagent ended",
        text="exit 0",
        data={},
    )
    await rt.wait_idle(child_conversation)
    first, later = sorted(
        await rt.runs.list_runs(conversation_id=child_conversation), key=lambda r: r.created_at
    )
    assert (later.kind, later.narrowing) == ("delegate", first.narrowing)
    assert later.narrowing.tools == frozenset({"echo"})
    rows = await rt.conversations.rows(child_conversation, run_id=later.id)
    refused = [r.data["result"]["error_code"] for r in rows if r.kind == "tool_result"]
    assert refused == ["not_visible"]  # sync_echo stays out of reach


async def test_foreground_children_run_even_when_their_parents_fill_every_slot(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    """A parent that only waits for its child lends its job slot; without that, one slot
    and two generations of subagents would wait for each other forever."""
    await rt_platform.admin.set_live("runs_max_concurrent", 1)
    grandchild = write_script({"text": "grandchild answer"}, name="grandchild")
    child = write_script(
        {"tool_calls": [call("delegate", task="g", model=grandchild)]},
        {"when_result_contains": "grandchild answer", "text": "child answer"},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="c", model=child)]},
        {"when_result_contains": "child answer", "text": "parent answer"},
    )
    async with asyncio.timeout(60):
        turn = await rt_platform.chat("go", model=parent, profile="auto")
    assert (turn.status, turn.text) == ("finished", "parent answer")
