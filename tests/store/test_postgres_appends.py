"""Timeline appends on PostgreSQL: one statement on the writer's kept connection, numbers
unique and gap-free beside other engines and processes, no acknowledged row lost to SIGKILL,
and the kept connection recovered when it breaks. A real server, as in test_postgres."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import event

import corral
from corral.errors import NotFound
from corral.runtime.appends import Appender
from corral.runtime.timeline import NewRow
from corral.store import make_engine
from corral.store.pg_writer import PgWriter
from corral.store.tables import as_utc
from tests.runtime.appending import acknowledged, check, start_child


async def test_appends_on_postgresql_read_back_in_order_and_fail_clearly(
    data_dir: Path, database_url: str
) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        rt = platform.runtime
        assert isinstance(rt.kernel.writer, PgWriter)
        conversation = await rt.start_conversation()
        first = await rt.append(
            conversation.id,
            [
                NewRow(kind="user_message", user_id="u1", data={"text": "héllo", "n": [1, None]}),
                NewRow(kind="tool_call", run_id="r1", call_id="c1", data={"tool": "t"}),
            ],
        )
        together = await asyncio.gather(
            *(rt.append(conversation.id, [NewRow(kind="card", data={"k": k})]) for k in range(30))
        )
        stored = await rt.conversations.rows(conversation.id)
        assert [r.seq for r in stored] == list(range(1, 33))
        assert [(r.kind, dict(r.data), r.run_id, r.user_id, r.call_id) for r in stored[:2]] == [
            (r.kind, dict(r.data), r.run_id, r.user_id, r.call_id) for r in first
        ]
        assert [as_utc(r.created_at) for r in stored[:2] if r.created_at] == [
            r.created_at for r in first
        ]
        assert {r.seq: r.data for (r,) in together} == {r.seq: r.data for r in stored[2:]}
        with pytest.raises(NotFound, match="no conversation 'c_missing' to append to"):
            await rt.append("c_missing", [NewRow(kind="card", data={})])


async def test_an_append_on_postgresql_is_one_statement_outside_sqlalchemy(
    data_dir: Path, database_url: str
) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        rt = platform.runtime
        conversation = await rt.start_conversation()
        statements: list[str] = []

        def seen(*args: object) -> None:
            statements.append(str(args[2]))

        event.listen(rt.kernel.engine.sync_engine, "before_cursor_execute", seen)
        checkouts: list[object] = []

        def checked_out(*args: object) -> None:
            checkouts.append(args[0])

        event.listen(rt.kernel.engine.sync_engine.pool, "checkout", checked_out)
        for k in range(5):
            await rt.append(conversation.id, [NewRow(kind="card", data={"k": k})])
        # No SQLAlchemy statement, no ping, and at most one checkout: the writer keeps its
        # connection from its first use (this append, or an earlier quick read of the
        # configuration version through the same writer).
        assert statements == [] and len(checkouts) <= 1


async def test_engines_appending_at_once_on_postgresql_retry_to_gap_free_numbers(
    data_dir: Path, database_url: str
) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        conversation = await platform.runtime.start_conversation()
    engines = [make_engine(database_url) for _ in range(3)]
    writers = [PgWriter(engine) for engine in engines]
    appenders = [Appender(engine, writer) for engine, writer in zip(engines, writers, strict=True)]
    try:
        told = await asyncio.gather(
            *(
                appender.append(conversation.id, [NewRow(kind="card", data={"w": w, "k": k})])
                for k in range(20)
                for w, appender in enumerate(appenders)
            )
        )
    finally:
        for writer, engine in zip(writers, engines, strict=True):
            await writer.aclose()
            await engine.dispose()
    async with corral.open(data_dir, database_url=database_url) as platform:
        stored = await platform.runtime.conversations.rows(conversation.id)
    assert [r.seq for r in stored] == list(range(1, 61))
    assert {r.seq: r.data for (r,) in told} == {r.seq: r.data for r in stored}


async def test_a_broken_kept_connection_is_replaced(data_dir: Path, database_url: str) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        rt = platform.runtime
        writer = rt.kernel.writer
        assert isinstance(writer, PgWriter)
        conversation = await rt.start_conversation()
        await rt.append(conversation.id, [NewRow(kind="card", data={})])
        (pid,) = await writer.fetch("SELECT pg_backend_pid()")
        async with rt.kernel.engine.connect() as other:
            raw = await other.get_raw_connection()
            await raw.driver_connection.execute(  # type: ignore[union-attr]
                f"SELECT pg_terminate_backend({int(pid[0])})"
            )
        try:
            await rt.append(conversation.id, [NewRow(kind="card", data={"n": 2})])
        except asyncpg.ConnectionDoesNotExistError:
            pass  # it died with the statement in flight: not acknowledged, not retried
        (again,) = await rt.append(conversation.id, [NewRow(kind="card", data={"n": 3})])
        stored = await rt.conversations.rows(conversation.id)
        assert [r.seq for r in stored] == list(range(1, again.seq + 1))
        assert stored[-1].data == {"n": 3} and 2 <= again.seq <= 3


async def test_sigkill_on_postgresql_loses_no_acknowledged_row(
    data_dir: Path, database_url: str
) -> None:
    async with corral.open(data_dir, database_url=database_url) as platform:
        rt = platform.runtime
        conversation = await rt.start_conversation()
        child = await start_child(database_url, conversation.id, "only")
        told = await acknowledged(child, 200)
        stored = await rt.conversations.rows(conversation.id)
        check(stored, {"only": told})
