"""A run's end through the SQLite writer stores what the SQLAlchemy transaction stores."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from corral.platform import Platform
from corral.runtime.endings import Outcome, end_run
from corral.runtime.runtime import Runtime
from corral.store import tables as t
from corral.store.writer import SqliteWriter
from tests.runtime.conftest import ScriptWriter, call

WRITE = call("write_note", path="data://note.md", text="hello")


async def _stopped_while_parked(platform: Platform, rt: Runtime, model: str) -> dict[str, Any]:
    """Park a run on an approval, stop it, and give what its end stored (ids and times
    left out, their presence kept)."""
    turn = await platform.chat("write", model=model)
    assert turn.status == "parked"
    stopped = await rt.stop(turn.run_id)
    async with platform.sessions() as session:
        approval = await session.get(t.Approval, turn.approvals[0])
        decision = await session.get(t.Decision, turn.approvals[0])
    assert approval is not None
    rows = await rt.conversations.rows(turn.conversation_id)
    conversation = await rt.conversations.get(turn.conversation_id)
    run = stopped.to_json()
    return {
        "run": {
            k: v
            for k, v in run.items()
            if k not in ("id", "conversation_id", "created_at", "ended_at", "active_seconds")
        },
        "ended": stopped.ended_at is not None,
        "approval": (approval.status, approval.note, approval.decided_at is not None),
        "decision": None if decision is None else (decision.status, decision.note),
        "card": [
            (r.kind, r.data, r.run_id == stopped.id, r.user_id) for r in rows if r.kind == "card"
        ][-1],
        "seqs": [r.seq for r in rows],
        "active_run": conversation.active_run_id,
    }


async def test_the_writer_ends_a_run_as_the_sessions_do(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    assert isinstance(rt.kernel.writer, SqliteWriter)
    model = write_script({"tool_calls": [WRITE]})
    through_writer = await _stopped_while_parked(rt_platform, rt, model)
    writer, rt.kernel.writer = rt.kernel.writer, None  # the SQLAlchemy transaction
    try:
        through_sessions = await _stopped_while_parked(rt_platform, rt, model)
    finally:
        rt.kernel.writer = writer
    assert through_writer["run"] == through_sessions["run"]
    assert through_writer == through_sessions
    assert through_writer["run"]["status"] == "stopped" and through_writer["ended"]
    assert through_writer["approval"][:2] == ("closed", "the run ended (stopped: stopped)")
    assert through_writer["active_run"] is None


async def test_a_run_no_longer_to_end_is_left_as_it_is(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    turn = await rt_platform.chat("hi", model=write_script({"text": "hello"}))
    async with rt_platform.sessions() as session:
        before = len(list(await session.scalars(select(t.Approval))))
    run = await rt.runs.get(turn.run_id)
    ended = await end_run(rt, run, Outcome(status="failed"), from_statuses=["running"])
    assert ended is False
    after = await rt.runs.get(turn.run_id)
    assert after == run
    assert [r.kind for r in await rt.conversations.rows(turn.conversation_id)][-1] == "card"
    async with rt_platform.sessions() as session:
        assert len(list(await session.scalars(select(t.Approval)))) == before
