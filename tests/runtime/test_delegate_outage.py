"""A delegate run that ends while its database cannot be written still answers the parent
call that waits for it: once the database is back, not never. The test holds SQLite's write
lock from a second, real connection while the child's end is being settled, so every write of
the settling fails as in an outage, and lets it go right after."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import pytest

from corral.platform import Platform
from corral.runtime.delegation import Delegation
from corral.runtime.runs import TERMINAL, RunRecord
from corral.runtime.runtime import Runtime
from tests.runtime.conftest import ScriptWriter, call


class _WriteLock:
    """SQLite's one write lock, held by a connection of its own (as another process would)."""

    def __init__(self, database: str) -> None:
        self._connection = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        self.held = False

    def take(self) -> None:
        self._connection.execute("BEGIN EXCLUSIVE")
        self.held = True

    def release(self) -> None:
        if self.held:
            self._connection.execute("ROLLBACK")
            self.held = False

    def close(self) -> None:
        self.release()
        self._connection.close()


async def test_a_child_ending_in_an_outage_answers_its_waiting_parent_once_it_is_over(
    rt_platform: Platform,
    rt: Runtime,
    write_script: ScriptWriter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]},
        {"when_result_contains": "denied", "text": "Not allowed; I left the note alone."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child)]},
        {"when_result_contains": "left the note alone", "text": "Understood."},
    )
    turn = await rt_platform.chat("go", model=parent, profile="balanced")
    await rt_platform.decide_approval(turn.approvals[0], "approve")  # the delegate call
    (wait,) = (await rt.wait_run(turn.run_id)).waiting
    (inner,) = (await rt.runs.get(wait.id)).waiting

    database = rt.kernel.engine.url.database
    assert database is not None
    lock = _WriteLock(database)

    async def cut_off(run: RunRecord, status: str) -> None:
        if run.id == wait.id:
            await asyncio.to_thread(lock.take)

    async def back(run: RunRecord, status: str) -> None:
        if run.id == wait.id:
            await asyncio.to_thread(lock.release)

    hooks = rt.run_end_hooks
    settles = next(i for i, h in enumerate(hooks) if getattr(h, "__name__", "") == "_on_run_end")
    hooks[settles:settles + 1] = [cut_off, hooks[settles], back]  # fmt: skip
    caplog.set_level(logging.INFO, logger="corral.runtime")
    try:
        await rt_platform.decide_approval(inner.id, "deny", note="not now")
        assert (await rt.wait_run(wait.id)).status == "finished"
        async with asyncio.timeout(60):  # parked until the retry answers its call
            await rt.board.wait_until(turn.run_id, TERMINAL)
    finally:
        await asyncio.to_thread(lock.close)
    assert (await rt.runs.get(turn.run_id)).status == "finished"
    assert (await rt.result(turn.run_id)).text == "Understood."
    said = caplog.text
    assert f"delegate run {wait.id} ended during a database outage" in said, said
    assert f"delegate run {wait.id}: its parent was answered after the outage" in said, said
    assert "could not be answered" not in said


async def test_the_sweep_answers_a_parent_left_waiting_by_a_process_that_closed_in_the_outage(
    rt_platform: Platform, rt: Runtime, write_script: ScriptWriter
) -> None:
    child = write_script(
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]},
        {"when_result_contains": "denied", "text": "Not allowed; I left the note alone."},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child)]},
        {"when_result_contains": "left the note alone", "text": "Understood."},
    )
    turn = await rt_platform.chat("go", model=parent, profile="balanced")
    await rt_platform.decide_approval(turn.approvals[0], "approve")  # the delegate call
    (wait,) = (await rt.wait_run(turn.run_id)).waiting
    (inner,) = (await rt.runs.get(wait.id)).waiting

    database = rt.kernel.engine.url.database
    assert database is not None
    lock = _WriteLock(database)
    delegation = rt_platform.services.require(Delegation)

    async def cut_off(run: RunRecord, status: str) -> None:
        if run.id == wait.id:
            await asyncio.to_thread(lock.take)

    async def closed_in_the_outage(run: RunRecord, status: str) -> None:
        if run.id == wait.id:
            await delegation.close()  # its retry is lost, as in a process that closed
            await asyncio.to_thread(lock.release)

    hooks = rt.run_end_hooks
    settles = next(i for i, h in enumerate(hooks) if getattr(h, "__name__", "") == "_on_run_end")
    hooks[settles:settles + 1] = [cut_off, hooks[settles], closed_in_the_outage]  # fmt: skip
    try:
        await rt_platform.decide_approval(inner.id, "deny", note="not now")
        assert (await rt.wait_run(wait.id)).status == "finished"
    finally:
        await asyncio.to_thread(lock.close)
    assert (await rt.runs.get(turn.run_id)).status == "parked"  # nobody answered it
    assert await delegation.sweep() == [wait.id]
    async with asyncio.timeout(60):
        await rt.board.wait_until(turn.run_id, TERMINAL)
    assert (await rt.runs.get(turn.run_id)).status == "finished"
    assert (await rt.result(turn.run_id)).text == "Understood."
    assert await delegation.sweep() == []  # answered once
