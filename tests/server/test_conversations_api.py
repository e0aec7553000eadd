"""Conversation routes: chat, approvals resuming runs, the inbox, stop, the event stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import corral
from corral.platform import Platform
from corral.runtime.runtime import Runtime
from corral.server import create_app
from corral.server.sse import conversation_events
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, call


@pytest.fixture
async def api_platform(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as platform:
        yield platform


@pytest.fixture
async def http(api_platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    token = await api_platform.identity.create_token("owner")
    transport = httpx.ASGITransport(app=create_app(api_platform))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    ) as client:
        yield client


def script(tmp_path: Path, *turns: Any) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


async def test_chat_read_and_list(http: httpx.AsyncClient, tmp_path: Path) -> None:
    model = script(tmp_path, {"tool_calls": [call("echo", text="hi")]}, {"text": "It said hi."})
    created = await http.post("/conversations", json={"model": model})
    assert created.status_code == 201
    cid = created.json()["id"]
    turn = (await http.post(f"/conversations/{cid}/messages", json={"message": "hello"})).json()
    assert turn["status"] == "finished" and turn["text"] == "It said hi."
    shown = (await http.get(f"/conversations/{cid}")).json()
    assert [r["kind"] for r in shown["rows"]][:3] == ["user_message", "model_turn", "tool_call"]
    later = (await http.get(f"/conversations/{cid}", params={"after": 5})).json()
    assert all(r["seq"] > 5 for r in later["rows"])
    listed = (await http.get("/conversations")).json()["conversations"]
    assert [c["id"] for c in listed] == [cid] and listed[0]["last_seq"] == len(shown["rows"])
    run = (await http.get(f"/runs/{turn['run_id']}")).json()
    assert run["status"] == "finished" and run["steps"] == 2


async def test_an_approval_decided_over_http_resumes_the_run(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path, data_dir: Path
) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [call("write_note", path="data://api.md", text="x")]},
        {"text": "Written."},
    )
    turn = (await http.post("/chat", json={"message": "write", "model": model})).json()
    assert turn["status"] == "parked"
    approval = turn["waiting"][0]["id"]
    decided = await http.post(f"/approvals/{approval}/decision", json={"decision": "approve"})
    assert decided.json()["result"]["status"] == "pending"  # the run's job runs the call
    final = await api_platform.runtime.wait_run(turn["run_id"])
    assert final.status == "finished"
    shown = (await http.get(f"/approvals/{approval}")).json()
    assert shown["result"]["content"][0]["text"] == "wrote data://api.md"
    assert (data_dir / "drive" / "api.md").read_text() == "note:x"


async def test_the_inbox_route_queues_a_message(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    model = script(tmp_path, {"text": "first"}, {"when_message_contains": "status?", "text": "ok"})
    turn = (await http.post("/chat", json={"message": "hi", "model": model})).json()
    cid = turn["conversation_id"]
    queued = await http.post(f"/conversations/{cid}/inbox", json={"text": "status?"})
    assert queued.status_code == 202 and queued.json()["hop"] == 1
    await api_platform.runtime.wait_idle(cid)
    rows = (await http.get(f"/conversations/{cid}")).json()["rows"]
    assert [r["kind"] for r in rows][-3:] == ["message", "model_turn", "card"]
    assert rows[-2]["data"]["text"] == "ok"


async def test_stop_over_http_and_access_is_per_user(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    model = script(tmp_path, {"tool_calls": [call("gate", name="never")]})
    started = (
        await http.post("/chat", json={"message": "hold", "model": model, "wait": False})
    ).json()
    assert started["status"] == "queued"
    stopped = (await http.post(f"/runs/{started['run_id']}/stop")).json()
    assert stopped["status"] == "stopped"
    await api_platform.identity.create_user("max", "member")
    other = await api_platform.identity.create_token("max")
    denied = await http.get(
        f"/conversations/{started['conversation_id']}",
        headers={"Authorization": f"Bearer {other.token}"},
    )
    assert denied.status_code == 404


async def test_the_event_stream_replays_rows(http: httpx.AsyncClient, tmp_path: Path) -> None:
    model = script(tmp_path, {"text": "hello there"})
    turn = (await http.post("/chat", json={"message": "hi", "model": model})).json()
    response = await http.get(
        f"/conversations/{turn['conversation_id']}/events", params={"follow": "false"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    ids = [
        line.split(":", 1)[1].strip()
        for line in response.text.splitlines()
        if line.startswith("id:")
    ]
    assert ids == ["1", "2", "3"]
    assert "event: row" in response.text


async def test_a_reconnect_with_last_event_id_replays_only_later_rows(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    model = script(tmp_path, {"text": "hello there"})
    turn = (await http.post("/chat", json={"message": "hi", "model": model})).json()
    response = await http.get(
        f"/conversations/{turn['conversation_id']}/events",
        params={"follow": "false", "after": "0"},
        headers={"Last-Event-ID": "2"},
    )
    ids = [
        line.split(":", 1)[1].strip()
        for line in response.text.splitlines()
        if line.startswith("id:")
    ]
    assert ids == ["3"]


async def test_the_event_stream_follows_a_live_turn(api_platform: Platform, tmp_path: Path) -> None:
    rt: Runtime = api_platform.runtime
    model = script(
        tmp_path,
        {"text": "first"},
        {"tool_calls": [call("echo", text="live")]},
        {"text": "streamed answer"},
    )
    first = await rt.chat("one", model=model)
    owner = (await api_platform.caller()).user_id
    seen: list[dict[str, Any]] = []
    replayed, ended = asyncio.Event(), asyncio.Event()

    async def read() -> None:
        async for message in conversation_events(rt, first.conversation_id, user=owner):
            event = json.loads(message["data"])
            seen.append(event)
            if event["type"] == "row" and event["row"]["seq"] == first.rows[-1].seq:
                replayed.set()  # the backlog is out, so the reader is subscribed
            if event["type"] == "run" and event["status"] == "finished":
                ended.set()
                return

    reader = asyncio.create_task(read())
    await asyncio.wait_for(replayed.wait(), 10)
    await rt.chat("two", conversation_id=first.conversation_id)
    await asyncio.wait_for(ended.wait(), 10)
    await reader
    texts = "".join(e["text"] for e in seen if e["type"] == "delta")
    assert texts == "streamed answer"
    assert any(e["type"] == "output" or e["type"] == "row" for e in seen)
    seqs = [e["row"]["seq"] for e in seen if e["type"] == "row"]
    assert seqs == list(range(1, seqs[-1] + 1))  # backlog, then live, nothing twice


async def test_the_decisions_route_lists_what_waits_and_who_answered(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [call("write_note", path="data://d.md", text="x")]},
        {"text": "Written."},
    )
    turn = (await http.post("/chat", json={"message": "write", "model": model})).json()
    approval = turn["waiting"][0]["id"]
    [pending] = (await http.get("/decisions")).json()["decisions"]
    assert (pending["id"], pending["kind"], pending["status"]) == (approval, "approval", "pending")
    assert pending["summary"].startswith("write_note") and pending["expires_at"]
    assert pending["run_id"] == turn["run_id"]
    decided = await http.post(f"/approvals/{approval}/decision", json={"decision": "approve"})
    assert decided.status_code == 200
    again = await http.post(f"/approvals/{approval}/decision", json={"decision": "deny"})
    assert again.status_code == 409 and again.json()["code"] == "already_decided"
    assert "already decided by owner from the API at" in again.json()["detail"]
    assert (await http.get("/decisions")).json()["decisions"] == []
    [done] = (await http.get("/decisions", params={"status": "decided"})).json()["decisions"]
    assert (done["decided_by"], done["surface"]) == ("owner", "http")
    assert (await http.get(f"/decisions/{approval}")).json()["answer"] == {"decision": "approve"}
    missing = await http.get("/decisions/ap_nope")
    assert missing.status_code == 404
    await api_platform.runtime.wait_run(turn["run_id"])
