"""A run's start and end skip the work there is none for (approved calls to run, questions
to close, tickets to end, children to stop, deliveries to wake with, budgets to open, a goal
state to show), each known from one read on the calling thread instead of a session, and its
short row reads are made there too: a plain chat sends none of those statements through
SQLAlchemy, and each still happens when there is something to do."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from corral.platform import Platform
from corral.runtime.runtime import Runtime
from corral.store.meta_reads import MetaReader
from tests.runtime.conftest import ScriptWriter

SKIPPED = (
    "FROM approvals",
    "UPDATE questions",
    "FROM run_tickets",
    "parent_run_id IN",
    "parent_run_id =",
    "FROM conversation_deliveries",
    "FROM run_budgets",
    "FROM conversation_budgets",
    "FROM conversation_goals",
    "FROM conversation_rows",
)


async def statements_of_a_chat(platform: Platform, rt: Runtime, model: str) -> list[str]:
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split()))

    engine = rt.kernel.engine.sync_engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        turn = await platform.chat("hello", model=model)
    finally:
        event.remove(engine, "before_cursor_execute", before)
    assert turn.status == "finished"
    return seen


async def test_a_plain_chat_reads_what_it_skips_without_a_session(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    assert isinstance(rt.kernel.reader, MetaReader)
    model = write_script({"text": "hi"})
    await rt_platform.chat("warm up", model=model)
    seen = await statements_of_a_chat(rt_platform, rt, model)
    assert [s for s in seen if any(part in s for part in SKIPPED)] == []
    # Without the reader (SQLite in memory, PostgreSQL) the sessions ask, as before.
    reader, rt.kernel.reader = rt.kernel.reader, None
    try:
        seen = await statements_of_a_chat(rt_platform, rt, model)
    finally:
        rt.kernel.reader = reader
    assert any("FROM conversation_deliveries" in s for s in seen)
    assert any("FROM approvals" in s for s in seen)


def test_a_check_that_cannot_be_read_says_so(tmp_path: Any) -> None:
    reader = MetaReader(str(tmp_path / "store.db"))
    try:
        assert reader.exists("SELECT 1 FROM no_such_table WHERE id = ?", ("x",)) is None
        assert reader.exists("SELECT 1 WHERE ? = 'x'", ("x",)) is True
        assert reader.exists("SELECT 1 WHERE ? = 'x'", ("y",)) is False
    finally:
        reader.close()
