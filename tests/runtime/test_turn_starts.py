"""A turn's start goes through the store's writer on a SQLite file and through SQLAlchemy
elsewhere: both store the same run, rows and claim, and a turn that queued deliveries ride
in on still takes them along."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import update

from corral.platform import Platform
from corral.runtime.conversations import ConversationStore
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow
from corral.runtime.turns import start_turn, turn_spec
from corral.store import runtime_tables as t
from corral.store.writer import SqliteWriter
from tests.runtime.conftest import ScriptWriter

LEFT_OUT = ("id", "conversation_id", "created_at", "updated_at")


def stored(path: str, run_id: str) -> dict[str, Any]:
    """What the start stored for ``run_id``, read from the file as the store holds it (ids
    left out; the times kept as the text they are stored as, checked to parse)."""
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        run = dict(db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
        conversation = dict(
            db.execute(
                "SELECT active_run_id, updated_at FROM conversations WHERE id = ?",
                (run["conversation_id"],),
            ).fetchone()
        )
        rows = [
            dict(r)
            for r in db.execute(
                "SELECT seq, kind, run_id, user_id, call_id, data, created_at "
                "FROM conversation_rows WHERE conversation_id = ? ORDER BY seq",
                (run["conversation_id"],),
            )
        ]
    finally:
        db.close()
    times = [run["created_at"], run["updated_at"], conversation["updated_at"]]
    times += [r.pop("created_at") for r in rows]
    return {
        "run": {k: v for k, v in run.items() if k not in LEFT_OUT},
        "types": {k: type(v).__name__ for k, v in run.items()},
        "times": [type(datetime.fromisoformat(t)).__name__ for t in times],
        "time_lengths": [len(t) for t in times],
        "claimed": conversation["active_run_id"] == run_id,
        "rows": [{**r, "run_id": r["run_id"] == run_id} for r in rows],
    }


async def first_turn(
    rt: Runtime, platform: Platform, model: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Start a turn and read what its start stored before its run moves on."""
    seen: list[dict[str, Any]] = []
    submit = rt.jobs.submit

    def reading(run_id: str) -> None:
        seen.append(stored(path, run_id))
        submit(run_id)

    monkeypatch.setattr(rt.jobs, "submit", reading)
    try:
        turn = await platform.chat("hello there", model=model)
    finally:
        monkeypatch.setattr(rt.jobs, "submit", submit)
    assert turn.status == "finished"
    return seen[0]


async def test_the_writer_starts_a_turn_as_the_sessions_do(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = rt.kernel.writer
    assert isinstance(writer, SqliteWriter)
    model = write_script({"text": "hi"})
    through_writer = await first_turn(rt, rt_platform, model, writer.path, monkeypatch)
    rt.kernel.writer = None  # the SQLAlchemy transaction
    try:
        through_sessions = await first_turn(rt, rt_platform, model, writer.path, monkeypatch)
    finally:
        rt.kernel.writer = writer
    assert through_writer["run"] == through_sessions["run"]
    assert through_writer == through_sessions
    assert through_writer["run"]["status"] == "queued" and through_writer["claimed"]
    assert [r["kind"] for r in through_writer["rows"]] == ["user_message"]


async def test_a_busy_conversation_starts_no_turn_through_the_writer(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    first = await rt_platform.chat("hello", model=write_script({"text": "hi"}))
    conversation = await rt.conversations.get(first.conversation_id)
    spec = await turn_spec(rt, conversation, user_id=conversation.owner_id, trigger="message")
    async with rt_platform.sessions() as session:
        await session.execute(
            update(t.Conversation)
            .where(t.Conversation.id == conversation.id)
            .values(active_run_id="someone")
        )
        await session.commit()
    runs_before = await rt.runs.list_runs(conversation_id=conversation.id)
    rows_before = await rt.conversations.rows(conversation.id)
    assert await start_turn(rt, spec, [NewRow(kind="user_message", data={"text": "x"})]) is None
    assert await rt.runs.list_runs(conversation_id=conversation.id) == runs_before
    assert await rt.conversations.rows(conversation.id) == rows_before


async def test_the_writer_makes_a_conversation_as_the_session_does(rt: Runtime) -> None:
    writer = rt.kernel.writer
    assert isinstance(writer, SqliteWriter)
    owner = await rt.kernel.caller()
    made = []
    for store in (rt.conversations, ConversationStore(rt.kernel.sessions)):
        info = await store.create(
            owner_id=owner.user_id, agent="default", profile="safe", model=None
        )
        stored_info = await rt.conversations.get(info.id)
        untimed = {"created_at": None, "updated_at": None}
        assert replace(info, **untimed) == replace(stored_info, **untimed)
        assert info.created_at is not None and stored_info.created_at is not None
        db = sqlite3.connect(writer.path)
        db.row_factory = sqlite3.Row
        try:
            row = dict(
                db.execute("SELECT * FROM conversations WHERE id = ?", (info.id,)).fetchone()
            )
        finally:
            db.close()
        times = [row.pop("created_at"), row.pop("updated_at")]
        row.pop("id")
        made.append(
            (row, [len(t) for t in times], replace(info, id="c", created_at=None, updated_at=None))
        )
    assert made[0] == made[1]
