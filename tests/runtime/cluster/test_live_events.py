"""Live events of runs that `corral worker` processes advance reach this process's readers
(the SSE stream, the event bus) over PostgreSQL LISTEN/NOTIFY: in order, none lost or doubled."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information

import corral
from corral.runtime.cluster.live_events import CHANNEL, asyncpg_dsn
from corral.runtime.timeline import NewRow
from corral.server.sse import conversation_events
from tests.runtime.cluster.conftest import Cluster, call


async def test_a_workers_rows_and_statuses_stream_to_an_sse_reader_here(
    cluster: Cluster,
) -> None:
    steps = [{"tool_calls": [call("echo", text=f"step {i}")]} for i in range(4)]
    model = cluster.script({"text": "first"}, *steps, {"text": "all done"})
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        assert rt.relay is not None
        cluster.ensure_workers(2)
        first = await rt.chat("one", model=model)
        assert first.status == "finished", cluster.logs()
        owner = (await platform.caller()).user_id
        seen: list[dict[str, Any]] = []
        replayed, ended = asyncio.Event(), asyncio.Event()
        second: list[str] = []

        async def read() -> None:
            async for message in conversation_events(rt, first.conversation_id, user=owner):
                event = json.loads(message["data"])
                seen.append(event)
                if event["type"] == "row" and event["row"]["seq"] == first.rows[-1].seq:
                    replayed.set()  # the backlog is out, so the reader is subscribed
                if event["type"] == "run" and event["run_id"] in second:
                    if event["status"] == "finished":
                        ended.set()
                        return

        reader = asyncio.create_task(read())
        await asyncio.wait_for(replayed.wait(), 30)
        run = await rt.start_chat("two", conversation_id=first.conversation_id)
        second.append(run.id)
        await asyncio.wait_for(ended.wait(), 60)
        await reader
        stored = await rt.conversations.rows(first.conversation_id)
        advanced = await rt.runs.get(run.id)
    assert advanced.worker is not None and advanced.worker != rt.worker
    seqs = [e["row"]["seq"] for e in seen if e["type"] == "row"]
    assert seqs == [r.seq for r in stored], "rows lost, doubled or out of order"
    assert [e["row"] for e in seen if e["type"] == "row"] == [r.to_json() for r in stored]
    statuses = [e["status"] for e in seen if e["type"] == "run" and e["run_id"] == run.id]
    # queued is this process's own event, running and finished the worker's: each once.
    assert statuses == ["queued", "running", "finished"], statuses
    last_row = max(i for i, e in enumerate(seen) if e["type"] == "row")
    assert seen[-1]["type"] == "run" and last_row < len(seen) - 1  # the rows came first
    tool_rows = [e for e in seen if e["type"] == "row" and e["row"]["run_id"] == run.id]
    assert sum(r["row"]["kind"] == "tool_result" for r in tool_rows) == 4


async def test_rows_of_another_process_reach_the_bus_once_despite_junk_on_the_channel(
    cluster: Cluster,
) -> None:
    """Two platforms on one database, as `corral serve` and a worker are: what one appends
    reaches the other's subscribers once, after malformed notifications are ignored."""
    async with (
        corral.open(cluster.data_dir) as writer,
        corral.open(cluster.data_dir) as reader,
    ):
        conversation = await writer.runtime.start_conversation()
        cid = conversation.id
        async with reader.runtime.events.subscribe(cid) as live:
            junk = await asyncpg.connect(asyncpg_dsn(cluster.database_url))
            try:
                for payload in ("not json", '{"o": "x"}', '{"o": "x", "c": 1, "s": "a", "e": 2}'):
                    await junk.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
            finally:
                await junk.close()
            for i in range(5):
                batch = [NewRow(kind="message", data={"text": f"n{i}-{j}"}) for j in range(3)]
                await writer.runtime.append(cid, batch)
            # One row the reader itself appends, after the writer's: published once too.
            await reader.runtime.append(cid, [NewRow(kind="message", data={"text": "mine"})])
            got: list[int] = []
            async with asyncio.timeout(30):
                while len(got) < 16:
                    event = await live.get()
                    assert event["type"] == "row"
                    got.append(event["row"]["seq"])
                # A last row is the fence: a doubled row would have come before it.
                await writer.runtime.append(cid, [NewRow(kind="message", data={"text": "end"})])
                fence = await live.get()
            assert live.get_nowait() is None
    assert got == list(range(1, 17))
    assert fence["row"]["seq"] == 17


async def test_the_embedded_default_keeps_its_bus_to_itself(tmp_path: Path) -> None:
    async with corral.open(tmp_path) as platform:
        rt = platform.runtime
        assert rt.relay is None  # SQLite: no listener, no connection, no notifications
        conversation = await rt.start_conversation()
        async with rt.events.subscribe(conversation.id) as live:
            await rt.append(conversation.id, [NewRow(kind="message", data={"text": "hi"})])
            event = live.get_nowait()
            assert live.get_nowait() is None
    assert event is not None and event["row"]["seq"] == 1


async def test_a_workers_notification_wakes_a_wait_on_its_run_here(cluster: Cluster) -> None:
    """The store is read once, then only when told: without the worker's notification
    this wait would sleep for an hour."""
    model = cluster.script({"tool_calls": [call("echo", text="hi")]}, {"text": "woken"})
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        rt.stored_waits.first_pause = rt.stored_waits.max_pause = 3600.0
        cluster.ensure_workers(2)
        result = await asyncio.wait_for(rt.chat("wake me", model=model), 30)
    assert result.status == "finished", cluster.logs()
    assert "woken" in result.text


async def test_a_lost_listener_reconnects_and_reads_what_it_missed(cluster: Cluster) -> None:
    async with (
        corral.open(cluster.data_dir) as writer,
        corral.open(cluster.data_dir) as reader,
    ):
        cid = (await writer.runtime.start_conversation()).id
        async with reader.runtime.events.subscribe(cid) as live:
            await writer.runtime.append(cid, [NewRow(kind="message", data={"text": "before"})])
            async with asyncio.timeout(30):
                assert (await live.get())["row"]["seq"] == 1
            # Every relay connection of this database is cut, as a server restart would.
            admin = await asyncpg.connect(asyncpg_dsn(cluster.database_url))
            try:
                cut = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    " AND (query = $1 OR query LIKE '%pg_notify($1::text, p)%')",
                    f'LISTEN "{CHANNEL}"',  # not the engine's own LISTEN connections
                )
            finally:
                await admin.close()
            assert cut >= 2
            for text in ("after 1", "after 2"):
                await writer.runtime.append(cid, [NewRow(kind="message", data={"text": text})])
            got = []
            async with asyncio.timeout(30):
                while len(got) < 2:
                    got.append((await live.get())["row"]["data"]["text"])
                await writer.runtime.append(cid, [NewRow(kind="message", data={"text": "end"})])
                fence = await live.get()
            assert live.get_nowait() is None
    assert got == ["after 1", "after 2"]
    assert fence["row"]["seq"] == 4
