"""On a SQLite file a run's row is read on the calling thread and claimed through the
store's writer: both answer the very record the SQLAlchemy session gives."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import event

from corral.platform import Platform
from corral.runtime.runs import RunRecord, RunStore
from corral.runtime.runtime import Runtime
from corral.store.meta_reads import MetaReader
from corral.store.writer import SqliteWriter
from tests.runtime.conftest import ScriptWriter, call

WRITE = call("write_note", path="data://note.md", text="hello")


def sessions_only(rt: Runtime) -> RunStore:
    return RunStore(rt.kernel.sessions)


async def test_a_run_read_on_the_calling_thread_is_the_sessions_record(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    assert isinstance(rt.kernel.reader, MetaReader)
    finished = await rt_platform.chat("hi", model=write_script({"text": "hello"}))
    parked = await rt_platform.chat("write", model=write_script({"tool_calls": [WRITE]}))
    assert parked.status == "parked"
    stopped = await rt.stop(parked.run_id)
    statements: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine = rt.kernel.engine.sync_engine
    for run_id in (finished.run_id, parked.run_id):
        event.listen(engine, "before_cursor_execute", before)
        try:
            inline = await rt.runs.get(run_id)
        finally:
            event.remove(engine, "before_cursor_execute", before)
        assert inline == await sessions_only(rt).get(run_id)
    assert statements == []
    assert stopped == await rt.runs.get(parked.run_id) and stopped.ended_at is not None
    assert await rt.runs.find("r_missing") is None


async def test_a_claim_through_the_writer_is_the_sessions_claim(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    assert isinstance(rt.kernel.writer, SqliteWriter)
    model = write_script({"text": "hello"})
    claimed: list[RunRecord] = []
    for store in (rt.runs, sessions_only(rt)):
        turn = await rt_platform.chat("hi", model=model)
        before = await store.get(turn.run_id)
        assert await store.claim(turn.run_id, from_statuses=["queued"], to="running") is None
        moved = await store.claim(
            turn.run_id,
            from_statuses=["finished"],
            to="stopped",
            bump_lease=True,
            worker="w-test",
            detail="stopped by the test",
            waiting=[],
        )
        assert moved is not None and moved == await store.get(turn.run_id)
        assert moved.lease == before.lease + 1 and moved.ended_at is not None
        claimed.append(moved)
    writer, sessions = claimed
    same = {"id": "r", "conversation_id": "c", "created_at": None, "ended_at": None}
    same |= {"active_seconds": 0.0}  # the time each run took
    assert replace(writer, **same) == replace(sessions, **same)
    assert (writer.status, writer.worker, writer.detail) == (
        "stopped",
        "w-test",
        "stopped by the test",
    )
