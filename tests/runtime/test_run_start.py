"""What a run's start reads: the claim answers the run itself, as a read after it would,
and one read gives the profiles the run follows."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from corral.errors import NotFound
from corral.platform import Platform
from corral.runtime.conversations import ConversationStore
from corral.runtime.runtime import Runtime
from corral.store import runtime_tables as rt_tables
from tests.runtime.conftest import ScriptWriter


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "write-then-read"])
async def test_a_claim_answers_the_run_as_a_read_after_it_would(
    rt_platform: Platform,
    rt: Runtime,
    write_script: ScriptWriter,
    monkeypatch: pytest.MonkeyPatch,
    returning: bool,
) -> None:
    if not returning:  # a database without UPDATE … RETURNING
        monkeypatch.setattr(rt.kernel.engine.dialect, "update_returning", False)
    turn = await rt_platform.chat("hi", model=write_script({"text": "hello"}))
    before = await rt.runs.get(turn.run_id)
    assert await rt.runs.claim(turn.run_id, from_statuses=["queued"], to="running") is None
    claimed = await rt.runs.claim(
        turn.run_id,
        from_statuses=["finished"],
        to="stopped",
        worker="w-test",
        lease=rt_tables.Run.lease + 1,
    )
    assert claimed is not None
    assert (claimed.status, claimed.worker) == ("stopped", "w-test")
    assert claimed.lease == before.lease + 1 and claimed.ended_at is not None
    assert claimed == await rt.runs.get(turn.run_id)


async def test_one_read_gives_the_profiles_a_run_follows(rt: Runtime) -> None:
    # A subagent's conversation (with its parent's) is covered by test_delegate's
    # test_a_parked_background_child_adopts_its_parents_stricter_profile.
    conversation = await rt.start_conversation(model="script:none", profile="safe")
    assert await rt.conversations.profiles(conversation.id) == ("safe", None)
    with pytest.raises(NotFound, match="no conversation 'c_missing'"):
        await rt.conversations.profiles("c_missing")


async def test_a_new_conversation_has_no_earlier_run_to_look_up(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A later turn keeps an earlier run's kind and narrowing (a subagent's, a workflow's);
    # the turn that makes the conversation has none to keep.
    looked: list[object] = []
    real = rt.runs.list_runs

    async def counted(**options: Any) -> Any:
        if options.get("conversation_id") is not None:
            looked.append(options)
        return await real(**options)

    monkeypatch.setattr(rt.runs, "list_runs", counted)
    turn = await rt_platform.chat("hi", model=write_script({"text": "hello"}))
    assert turn.status == "finished" and looked == []
    again = await rt_platform.chat(
        "more", conversation_id=turn.conversation_id, model=write_script({"text": "again"})
    )
    assert again.status == "finished" and len(looked) == 1


async def test_the_profiles_are_read_on_the_calling_thread_as_the_session_reads_them(
    rt: Runtime,
) -> None:
    conversation = await rt.start_conversation(model="script:none", profile="auto")
    sessions_only = ConversationStore(rt.kernel.sessions)
    statements: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine = rt.kernel.engine.sync_engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        inline = await rt.conversations.profiles(conversation.id)
    finally:
        event.remove(engine, "before_cursor_execute", before)
    assert statements == []
    assert inline == await sessions_only.profiles(conversation.id) == ("auto", None)
