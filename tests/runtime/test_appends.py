"""Timeline appends through the store's writer: what other readers see, numbers that stay
unique and gap-free beside the SQLAlchemy path and other processes, and no acknowledged row
lost when the appending process is killed (SIGKILL, real child processes)."""

from __future__ import annotations

import asyncio

import pytest

from corral.errors import NotFound
from corral.runtime.appends import append_rows, write
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from corral.store.tables import as_utc
from tests.runtime.appending import acknowledged, check, start_child

ACKS_BEFORE_KILL = 300


def _fields(row: TimelineRow) -> tuple[object, ...]:
    at = as_utc(row.created_at) if row.created_at else None
    return (row.seq, row.kind, dict(row.data), row.run_id, row.user_id, row.call_id, at)


async def test_an_appended_row_reads_back_the_same_through_every_reader(rt: Runtime) -> None:
    conversation = await rt.start_conversation()
    rows = [
        NewRow(kind="user_message", user_id="u1", data={"text": "héllo", "n": [1, 2.5, None]}),
        NewRow(kind="tool_call", run_id="r1", call_id="c1", data={"tool": "t", "args": {}}),
    ]
    stored = await rt.append(conversation.id, rows)
    assert [r.seq for r in stored] == [1, 2]
    through_orm = await rt.conversations.rows(conversation.id)
    in_bulk = await rt.conversations.rows_in_bulk(conversation.id)
    expected = [_fields(r) for r in stored]
    assert [_fields(r) for r in through_orm] == expected
    assert [_fields(r) for r in in_bulk] == expected


async def test_appends_on_both_paths_at_once_get_unique_gap_free_numbers(rt: Runtime) -> None:
    conversation = await rt.start_conversation()
    sessions = rt.kernel.sessions

    async def by_writer(k: int) -> list[TimelineRow]:
        return await rt.append(conversation.id, [NewRow(kind="card", data={"k": k})])

    async def by_session(k: int) -> list[TimelineRow]:
        row = [NewRow(kind="card", data={"k": k})]
        return await write(sessions, lambda session: append_rows(session, conversation.id, row))

    batches = await asyncio.gather(*(by_writer(k) if k % 3 else by_session(k) for k in range(60)))
    told = {row.seq: row.data["k"] for batch in batches for row in batch}
    stored = await rt.conversations.rows(conversation.id)
    assert [r.seq for r in stored] == list(range(1, 61))
    assert {r.seq: r.data["k"] for r in stored} == told


async def test_appending_to_a_missing_conversation_says_which(rt: Runtime) -> None:
    with pytest.raises(NotFound, match="no conversation 'c_missing' to append to"):
        await rt.append("c_missing", [NewRow(kind="card", data={})])


async def test_sigkill_during_a_burst_of_appends_loses_no_acknowledged_row(rt: Runtime) -> None:
    database_url = rt.kernel.settings.effective_database_url
    conversation = await rt.start_conversation()
    child = await start_child(database_url, conversation.id, "only")
    told = await acknowledged(child, ACKS_BEFORE_KILL)
    stored = await rt.conversations.rows(conversation.id)
    assert len(stored) >= len(told) >= ACKS_BEFORE_KILL
    check(stored, {"only": told})
    # The conversation goes on after the crash from where the store stands.
    (after,) = await rt.append(conversation.id, [NewRow(kind="card", data={})])
    assert after.seq == len(stored) + 1


async def test_two_processes_appending_at_once_and_killed_keep_every_number_once(
    rt: Runtime,
) -> None:
    database_url = rt.kernel.settings.effective_database_url
    conversation = await rt.start_conversation()
    first, second = await asyncio.gather(
        start_child(database_url, conversation.id, "first"),
        start_child(database_url, conversation.id, "second"),
    )
    # This process appends too, through its own writer, while both children do.
    ours = await asyncio.gather(
        *(
            rt.append(conversation.id, [NewRow(kind="card", data={"writer": "parent", "n": k})])
            for k in range(50)
        )
    )
    told = dict(
        zip(
            ("first", "second"),
            await asyncio.gather(
                acknowledged(first, ACKS_BEFORE_KILL // 2),
                acknowledged(second, ACKS_BEFORE_KILL // 2),
            ),
            strict=True,
        )
    )
    told["parent"] = {row.seq: row.data["n"] for (row,) in ours}
    stored = await rt.conversations.rows(conversation.id)
    check(stored, told)
    seqs = [set(given) for given in told.values()]
    assert not (seqs[0] & seqs[1] or seqs[0] & seqs[2] or seqs[1] & seqs[2])
