"""The cold prompt's bulk read gives exactly the rows the SQLAlchemy query gives."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from corral.platform import Platform
from corral.runtime import conversations
from corral.runtime.timeline import NewRow, TimelineRow

AWKWARD = {
    "text": 'quotes " and \\ backslashes, a tab\t, newline\n, unicode ⟦é🙂⟧, "],[" too',
    "nested": {"list": [1, 2.5, None, True, {"deep": "x"}], "empty": {}},
    "big": 12345678901234567890,
}


async def _filled(platform: Platform) -> str:
    rt = platform.runtime
    conversation = await rt.start_conversation(model="script:none")
    await rt.append(
        conversation.id,
        [
            NewRow(kind="user_message", data=AWKWARD, user_id="u_1"),
            NewRow(kind="model_turn", data={"text": "ok"}, run_id="r_1"),
            NewRow(kind="tool_call", call_id='k"1', data={"tool": "echo", "args": {}}),
            NewRow(kind="tool_result", call_id='k"1', data={"tool": "echo", "result": {}}),
            NewRow(kind="card", data={}),
        ],
    )
    return conversation.id


async def test_bulk_rows_equal_the_query_rows(platform: Platform) -> None:
    conversation = await _filled(platform)
    store = platform.runtime.conversations
    expected = await store.rows(conversation)
    got = await store.rows_in_bulk(conversation)
    assert len(got) == 5 and got == expected
    assert got[0].data == AWKWARD
    assert [r.created_at for r in got] == [r.created_at for r in expected]
    assert await store.rows_in_bulk(conversation, after=3) == expected[3:]


async def test_bulk_rows_of_nothing(platform: Platform) -> None:
    conversation = await _filled(platform)
    store = platform.runtime.conversations
    assert await store.rows_in_bulk(conversation, after=5) == []
    assert await store.rows_in_bulk("c_missing") == []


def test_stored_rows_are_the_same_frozen_rows() -> None:
    values = {f.name: f"v{i}" for i, f in enumerate(fields(TimelineRow))}
    built = TimelineRow.stored(**values)  # type: ignore[arg-type]
    assert built == TimelineRow(**values)  # type: ignore[arg-type]
    assert hash(built) == hash(TimelineRow(**values))  # type: ignore[arg-type]


async def test_bulk_rows_of_one_run_equal_the_query_rows(platform: Platform) -> None:
    # A run's result reads its rows this way: only that run's, in order, values intact.
    conversation = await _filled(platform)
    store = platform.runtime.conversations
    await platform.runtime.append(
        conversation, [NewRow(kind="model_turn", data={"text": "again"}, run_id="r_1")]
    )
    expected = await store.rows(conversation, run_id="r_1")
    got = await store.rows_in_bulk(conversation, run_id="r_1")
    assert [r.seq for r in got] == [2, 6] and got == expected
    assert await store.rows_in_bulk(conversation, run_id="r_none") == []
    assert await store.rows_in_bulk(conversation, after=2, run_id="r_1") == expected[1:]


async def test_short_reads_on_the_calling_thread_equal_the_query_rows(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A short read (a run's first prompt, its result) is made without a session; a long
    # one goes through the session, in aiosqlite's thread; both give the query's rows.
    conversation = await _filled(platform)
    store = platform.runtime.conversations
    expected = await store.rows(conversation)
    through_sessions: list[str] = []
    real = conversations.fetch_all

    async def counted(session: Any, sql: str, parameters: tuple[Any, ...]) -> Any:
        through_sessions.append(sql)
        return await real(session, sql, parameters)

    monkeypatch.setattr(conversations, "fetch_all", counted)
    assert await store.rows_in_bulk(conversation) == expected
    assert await store.rows_in_bulk(conversation, run_id="r_1") == expected[1:2]
    assert through_sessions == []
    monkeypatch.setattr(conversations, "INLINE_ROWS", 2)
    assert await store.rows_in_bulk(conversation) == expected
    assert await store.rows_in_bulk(conversation, after=3) == expected[3:]
    assert len(through_sessions) == 1  # only the longer one went through the session
