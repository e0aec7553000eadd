"""ask_question: the run parks on the questions, durably, and continues with the answers."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace
from pathlib import Path

import pytest

import corral
from corral.errors import AlreadyDecided, NotFound, UsageError
from corral.platform import Platform
from corral.runtime.questions import Questions
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow
from corral.runtime.turns import start_turn, turn_spec
from corral.tools.context import Narrowing
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call, kinds
from tests.runtime.recording import Recorder

ASK = call(
    "ask_question",
    questions=[
        {"question": "Which database?", "options": ["PostgreSQL", "SQLite"]},
        {
            "question": "Which extras?",
            "options": ["auth", "billing", "search"],
            "multi_select": True,
        },
    ],
)
AFTER = [
    {"when_result_contains": "→ SQLite", "text": "SQLite it is."},
    {"text": "I did not get the answer I expected."},
]


async def test_a_question_parks_the_run_and_the_answer_resumes_it(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("set it up", model=write_script({"tool_calls": [ASK]}, AFTER))
    assert turn.status == "parked" and len(turn.questions) == 1
    assert turn.approvals == [] and [w.tool for w in turn.waiting] == ["ask_question"]
    card = next(r for r in turn.rows if r.kind == "card")
    assert card.data["card"] == "waiting" and "Which database? [PostgreSQL / SQLite]" in str(
        card.data["text"]
    )
    assert (await rt.runs.get(turn.run_id)).status == "parked"
    async with asyncio.timeout(10):
        await rt.jobs.idle()  # nothing is held open while it waits
    assert not rt.live
    service = rt_platform.services.require(Questions)
    [open_] = await service.list_questions()
    assert open_.id == turn.questions[0] and open_.status == "open"
    assert [q.multi_select for q in open_.questions] == [False, True]

    answered = await service.answer(open_.id, [2, ["1", "search", "search"]], note="keep it lean")
    assert answered.status == "answered" and answered.answers == ("SQLite", ["auth", "search"])
    final = await rt.wait_run(turn.run_id)
    assert final.status == "finished"
    done = await rt.result(turn.run_id)
    assert done.text == "SQLite it is."
    result = next(r for r in done.rows if r.kind == "tool_result").data["result"]
    assert result["status"] == "ok" and result["data"]["answers"][1]["answer"] == ["auth", "search"]
    text = result["content"][0]["text"]
    assert "Which extras?\n   → auth, search" in text and "keep it lean" in text
    assert kinds(done.rows)[-4:] == ["card", "tool_result", "model_turn", "card"]
    assert await service.list_questions() == []
    with pytest.raises(AlreadyDecided, match="already decided by owner from the terminal at "):
        await service.answer(open_.id, ["SQLite", ["auth"]])


async def test_answers_are_checked_before_anything_is_stored(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("go", model=write_script({"tool_calls": [ASK]}, AFTER))
    service = rt_platform.services.require(Questions)
    qid = turn.questions[0]
    with pytest.raises(UsageError, match="2 question"):
        await service.answer(qid, ["SQLite"])
    with pytest.raises(UsageError, match="option 3 does not exist"):
        await service.answer(qid, [3, ["auth"]])
    with pytest.raises(UsageError, match="takes one answer"):
        await service.answer(qid, [["SQLite", "PostgreSQL"], ["auth"]])
    with pytest.raises(UsageError, match="picks nothing"):
        await service.answer(qid, ["SQLite", []])
    assert (await service.get(qid)).status == "open"
    # Own words are always welcome, also for a question with options.
    await service.answer(qid, ["DuckDB, if possible", "reports"])
    assert (await rt.wait_run(turn.run_id)).status == "finished"
    assert (await rt.result(turn.run_id)).text == "I did not get the answer I expected."


async def test_only_the_person_the_run_acts_for_answers(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    await rt_platform.identity.create_user("mallory", "member")
    turn = await rt_platform.chat("go", model=write_script({"tool_calls": [ASK]}, AFTER))
    service = rt_platform.services.require(Questions)
    assert await service.list_questions(user="mallory") == []
    with pytest.raises(NotFound):
        await service.answer(turn.questions[0], ["SQLite", ["auth"]], user="mallory")
    assert (await service.get(turn.questions[0])).status == "open"


async def test_an_answer_arriving_after_a_restart_finishes_the_run(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Let me ask.", "tool_calls": [ASK]}, AFTER)
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        turn = await platform.chat("set it up", model=model)
        assert turn.status == "parked"
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        rt = platform.runtime
        assert (await rt.runs.get(turn.run_id)).status == "parked"
        service = platform.services.require(Questions)
        [still] = await service.list_questions()
        assert still.id == turn.questions[0]
        await service.answer(still.id, ["SQLite", "billing"])
        final = await rt.wait_run(turn.run_id)
        assert (final.status, final.steps) == ("finished", 2)
        assert (await rt.result(turn.run_id)).text == "SQLite it is."


async def test_a_run_ended_by_start_up_recovery_leaves_no_question_open(
    data_dir: Path, write_script: ScriptWriter
) -> None:
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        turn = await platform.chat("go", model=write_script({"tool_calls": [ASK]}, AFTER))
        # As if the process died between storing the question and parking the run.
        dead = f"{socket.gethostname()}:999999999:1"
        moved = await platform.runtime.runs.move(
            turn.run_id, from_statuses=["parked"], to="running", worker=dead
        )
        assert moved
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        assert (await platform.runtime.runs.get(turn.run_id)).status == "partial"
        record = await platform.services.require(Questions).get(turn.questions[0])
        assert record.status == "closed"


async def test_a_run_that_ends_closes_its_open_questions(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("go", model=write_script({"tool_calls": [ASK]}, AFTER))
    assert (await rt.stop(turn.run_id)).status == "stopped"
    service = rt_platform.services.require(Questions)
    record = await service.get(turn.questions[0])
    assert record.status == "closed" and "stopped" in (record.note or "")
    with pytest.raises(UsageError, match="already closed"):
        await service.answer(record.id, ["SQLite", ["auth"]])
    assert await service.list_questions() == []


async def test_ask_question_never_reaches_a_subagent(rt_platform: Platform, rt: Runtime) -> None:
    top = {t.name for t in await rt_platform.visible_tools()}
    assert "ask_question" in top
    child = Narrowing(tools=frozenset({"ask_question", "echo"})).within(Narrowing(subagent=True))
    grandchild = Narrowing(blocked_tools=frozenset({"explode"})).within(child)
    for narrowing in (Narrowing(subagent=True), child, grandchild):
        visible = {t.name for t in await rt_platform.visible_tools(narrowing=narrowing)}
        assert "ask_question" not in visible and visible
        forged = await rt_platform.call_tool(
            "ask_question", {"questions": [{"question": "Sure?"}]}, narrowing=narrowing
        )
        assert forged.error_code == "not_visible" and "subagent" in forged.text
    assert await rt_platform.services.require(Questions).store.list_questions(status=None) == []


async def test_a_subagent_run_neither_sees_ask_question_nor_may_call_it(
    rt_platform: Platform, rt: Runtime
) -> None:
    model = Recorder(
        rt,
        "rec:sub",
        {"tool_calls": [call("ask_question", questions=[{"question": "Sure?"}])]},
        [{"when_result_contains": "not_visible", "text": "I decide myself."}, {"text": "??"}],
    )
    conversation = await rt.start_conversation(model=model.name)
    spec = await turn_spec(rt, conversation, user_id=conversation.owner_id, trigger="user_message")
    started = await start_turn(
        rt,
        replace(spec, narrowing=Narrowing(subagent=True)),
        [NewRow(kind="user_message", user_id=conversation.owner_id, data={"text": "go"})],
    )
    assert started is not None
    final = await rt.wait_run(started[0].id)
    assert final.status == "finished"
    assert (await rt.result(final.id)).text == "I decide myself."
    assert all("ask_question" not in seen.tools for seen in model.seen)
    assert "echo" in model.seen[0].tools


async def test_asking_needs_a_conversation_run(rt_platform: Platform) -> None:
    outside = await rt_platform.call_tool("ask_question", {"questions": [{"question": "Sure?"}]})
    assert outside.error_code == "no_conversation"
    one_option = await rt_platform.call_tool(
        "ask_question",
        {"questions": [{"question": "Which?", "options": ["a"], "multi_select": True}]},
    )
    assert one_option.error_code == "invalid_arguments"
