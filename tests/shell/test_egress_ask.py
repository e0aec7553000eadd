"""Egress ``ask`` (issue 35): a domain no rule matches is held at the proxy while the person
of the run answers a pending decision over HTTP ("allow once", "allow for this agent",
"deny"); no answer in time refuses it.

Real parts: a conversation run with the scripted model, ``curl`` in bubblewrap through the
platform's proxy to the loopback HTTPS stand-in ``api.test`` (only the tests' resolver
mapping sends it to loopback), the HTTP API over a loopback server.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from corral.platform import Platform
from corral.runtime.questions import Questions
from corral.server.app import create_app
from corral.shell.egress.log import CallScope, EgressLog
from corral.shell.egress.policy import HostDecision, egress_policy_for
from corral.shell.egress.proxy import EgressProxy
from corral.shell.egress.upstream import UpstreamConnector
from corral.store.shell_tables import EgressApprovedHost, EgressConnection
from corral.web.fetch.addresses import AddressRules
from tests.server.loopback import serving
from tests.shell.conftest import BWRAP
from tests.shell.test_egress import Site, sandboxed, site, world
from tests.shell.test_interfaces import cli

__all__ = ["sandboxed", "site", "world"]  # the fixtures, shared with test_egress

pytestmark = pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")

_ASKED = re.compile(r"\[egress\] (\S+) waits for your answer \((q_\w+)\)")


def _script(tmp_path: Path, *commands: str) -> str:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "execute", "args": {"command": c, "cwd": "work://"}}]}
        for c in commands
    ]
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"turns": [*turns, {"text": "Done."}]}))
    return f"script:{path}"


def _curl(site: Site) -> str:
    return f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"


async def _asked(events: AsyncIterator[dict[str, Any]], turn: asyncio.Task[Any]) -> str:
    """The id of the next question the call's live output names (the turn must not end)."""
    async for event in events:
        assert not turn.done(), turn.result()
        found = _ASKED.search(str(event.get("text", "")))
        if event["type"] == "output" and found:
            return found.group(2)
    raise AssertionError("unreachable")


async def _results(platform: Platform, conversation_id: str) -> list[dict[str, Any]]:
    rows = await platform.rows(conversation_id)
    return [r.data["result"] for r in rows if r.kind == "tool_result"]


def _text(result: dict[str, Any]) -> str:
    return "\n".join(str(block.get("text", "")) for block in result["content"])


async def _ask_policy(platform: Platform, site: Site, seconds: float = 60) -> None:
    await platform.admin.set_live("egress", {"unmatched": "ask", "ports": [site.tls_port]})
    await platform.admin.set_live("egress_ask_seconds", seconds)


async def test_allow_once_lets_this_call_through_asking_once_and_deny_refuses_the_next(
    sandboxed: tuple[Platform, Path], site: Site, tmp_path: Path
) -> None:
    platform, _ = sandboxed
    await _ask_policy(platform, site)
    token = (await platform.identity.create_token("owner")).token
    twice = f"{_curl(site)}; {_curl(site)}"
    model = _script(tmp_path, twice, _curl(site))
    conversation = await platform.runtime.start_conversation(model=model, profile="auto")
    async with (
        asyncio.timeout(120),
        platform.runtime.events.subscribe(conversation.id) as events,
        serving(create_app(platform)) as base,
        httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api,
    ):
        turn = asyncio.create_task(
            platform.chat("go", conversation_id=conversation.id, model=model)
        )
        first = await _asked(events, turn)
        pending = await api.get("/decisions")
        assert [d["id"] for d in pending.json()["decisions"]] == [first], pending.text
        allowed = await api.post(f"/questions/{first}/answer", json={"answers": [1]})
        assert allowed.status_code == 200, allowed.text
        second = await _asked(events, turn)  # the next call asks again: "once" was this call
        denied = await api.post(f"/questions/{second}/answer", json={"answers": ["deny"]})
        assert denied.status_code == 200, denied.text
        await turn
        decided = (await api.get(f"/decisions/{first}")).json()
    assert (decided["status"], decided["surface"], decided["answer"]) == (
        "decided",
        "http",
        {"answers": ["allow once"]},
    )
    assert decided["decided_by"] and decided["decided_at"]
    once, refused = await _results(platform, conversation.id)
    assert _text(once).count("hello from api.test") == 2, _text(once)
    # Two connections to the host in one call, one question.
    asked = await platform.services.require(Questions).list_questions(status=None)
    assert sorted(q.id for q in asked) == sorted([first, second])
    assert "hello from api.test" not in _text(refused)
    (why,) = refused["data"]["egress"]["refused_connections"]
    assert why["rule"] == "asked: denied" and second in why["reason"], why
    async with platform.kernel.sessions() as session:
        rules = list(await session.scalars(select(EgressConnection.rule)))
        kept = list(await session.scalars(select(EgressApprovedHost)))
    assert rules == ["asked: allow once", "asked: allow once", "asked: denied"]
    assert kept == []


async def test_allow_for_this_agent_is_kept_for_its_next_calls(
    sandboxed: tuple[Platform, Path], site: Site, tmp_path: Path
) -> None:
    platform, _ = sandboxed
    await _ask_policy(platform, site)
    token = (await platform.identity.create_token("owner")).token
    model = _script(tmp_path, _curl(site), _curl(site))
    conversation = await platform.runtime.start_conversation(model=model, profile="auto")
    async with (
        asyncio.timeout(120),
        platform.runtime.events.subscribe(conversation.id) as events,
        serving(create_app(platform)) as base,
        httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api,
    ):
        turn = asyncio.create_task(
            platform.chat("go", conversation_id=conversation.id, model=model)
        )
        asked = await _asked(events, turn)
        kept = await api.post(f"/questions/{asked}/answer", json={"answers": [2]})
        assert kept.status_code == 200, kept.text
        await turn
    first, again = await _results(platform, conversation.id)
    assert "hello from api.test" in _text(first)
    assert "hello from api.test" in _text(again)  # without a question
    assert len(await platform.services.require(Questions).list_questions(status=None)) == 1
    async with platform.kernel.sessions() as session:
        (row,) = list(await session.scalars(select(EgressApprovedHost)))
        rules = list(await session.scalars(select(EgressConnection.rule)))
    assert (row.host, row.agent, row.decision_id) == ("api.test", "default", asked)
    assert rules == ["asked: allow for this agent", "remembered for the agent"]
    # Another agent of the same person is still asked: the policy refuses without a run.
    other = await platform.call_tool(
        "execute", {"command": _curl(site), "cwd": "work://"}, agent="other"
    )
    (refused,) = other.data["egress"]["refused_connections"]
    assert refused["rule"] == "unmatched (ask)", refused


async def test_no_answer_in_time_refuses_and_says_what_to_do(
    sandboxed: tuple[Platform, Path], site: Site, tmp_path: Path
) -> None:
    platform, _ = sandboxed
    await _ask_policy(platform, site, seconds=1)
    model = _script(tmp_path, _curl(site))
    async with asyncio.timeout(120):
        ended = await platform.chat("go", model=model, profile="auto")
    (result,) = await _results(platform, ended.conversation_id)
    (refused,) = result["data"]["egress"]["refused_connections"]
    assert refused["rule"] == "asked: no answer", refused
    assert "no answer came within 1 s" in refused["reason"]
    assert "allow for this agent" in refused["reason"]
    (question,) = await platform.services.require(Questions).list_questions(status=None)
    decision = await platform.decisions.get(question.id)
    assert decision.status == "expired"


async def test_concurrent_connections_to_one_host_share_one_question() -> None:
    """The proxy itself: two connections to the same host while the question is open wait
    on the same answer; the asker is called once."""
    asked: list[str] = []
    called, answer = asyncio.Event(), asyncio.Event()

    async def asker(host: str, port: int) -> HostDecision:
        asked.append(host)
        called.set()
        await answer.wait()
        return HostDecision(allowed=True, rule="asked: allow once", reason="allowed once")

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(2))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = EgressProxy(
        policy=egress_policy_for({"unmatched": "ask", "ports": [port]}),
        upstream=UpstreamConnector.unsafe_mapping(
            {"new.test": "127.0.0.1"}, judge=AddressRules().refusal
        ),
        log=EgressLog(CallScope()),
        asker=asker,
    )
    listener = socket.create_server(("127.0.0.1", 0))
    await proxy.serve(listener)

    async def tunnel() -> bytes:
        reader, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        writer.write(f"CONNECT new.test:{port} HTTP/1.1\r\nHost: new.test\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        writer.write(b"hi")
        body = await reader.read()
        writer.close()
        return head + body

    async with asyncio.timeout(30):
        both = asyncio.gather(tunnel(), tunnel())
        await called.wait()
        answer.set()
        first, second = await both
    await proxy.close()
    server.close()
    assert asked == ["new.test"]
    assert first.endswith(b"hi") and second.endswith(b"hi"), (first, second)
    assert [r.rule for r in proxy.log.records] == ["asked: allow once"] * 2


async def test_a_kept_host_is_listed_removed_and_the_next_call_asks_again(
    sandboxed: tuple[Platform, Path], site: Site, tmp_path: Path
) -> None:
    platform, _ = sandboxed
    await _ask_policy(platform, site)
    await platform.identity.create_user("max", "member")
    token = (await platform.identity.create_token("owner")).token
    other = (await platform.identity.create_token("max")).token
    # The model's turns run on: the first chat's call and answer, then the second's.
    path = tmp_path / "model.json"
    turns = [
        {"tool_calls": [{"name": "execute", "args": {"command": _curl(site), "cwd": "work://"}}]}
    ]
    path.write_text(json.dumps({"turns": [*turns, {"text": "Kept."}, *turns, {"text": "Done."}]}))
    model = f"script:{path}"
    conversation = await platform.runtime.start_conversation(model=model, profile="auto")
    data = platform.kernel.settings.data_dir
    async with (
        asyncio.timeout(120),
        platform.runtime.events.subscribe(conversation.id) as events,
        serving(create_app(platform)) as base,
        httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api,
        httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {other}"}) as max_,
    ):

        def chat() -> asyncio.Task[Any]:
            return asyncio.create_task(
                platform.chat("go", conversation_id=conversation.id, model=model)
            )

        turn = chat()
        asked = await _asked(events, turn)
        kept = await api.post(f"/questions/{asked}/answer", json={"answers": [2]})
        assert kept.status_code == 200, kept.text
        await turn
        listed = await api.get("/egress/hosts", params={"agent": "default"})
        (host,) = listed.json()["hosts"]
        assert (host["host"], host["agent"], host["decision_id"]) == ("api.test", "default", asked)
        code, out, err = await cli(data, "egress", "hosts", "--json")
        assert code == 0, err
        assert [h["host"] for h in json.loads(out)] == ["api.test"]
        # Another person sees none of it and may not reach it; unknown names say so.
        assert (await max_.get("/egress/hosts")).json()["hosts"] == []
        theirs = await max_.delete(
            "/egress/hosts/api.test", params={"agent": "default", "user": "owner"}
        )
        assert theirs.status_code == 403, theirs.text
        theirs_for_admin = await api.get("/egress/hosts", params={"user": "max"})
        assert theirs_for_admin.json() == {"hosts": []}, theirs_for_admin.text
        nobody = await api.get("/egress/hosts", params={"user": "nobody"})
        assert nobody.status_code == 404 and "no user 'nobody'" in nobody.text, nobody.text
        unknown = await api.get("/egress/hosts", params={"agent": "nobody"})
        assert unknown.status_code == 404 and "no agent 'nobody'" in unknown.text, unknown.text
        removed = await api.delete("/egress/hosts/API.test", params={"agent": "default"})
        assert removed.json() == {
            "removed": "api.test",
            "agent": "default",
            "user_id": host["user_id"],
        }
        again = await api.delete("/egress/hosts/api.test", params={"agent": "default"})
        assert again.status_code == 404 and "corral egress hosts --agent default" in again.text
        assert (await api.get("/egress/hosts")).json()["hosts"] == []
        turn = chat()
        second = await _asked(events, turn)  # no longer kept: the call asks again
        denied = await api.post(f"/questions/{second}/answer", json={"answers": ["deny"]})
        assert denied.status_code == 200, denied.text
        await turn
    _, refused = await _results(platform, conversation.id)
    assert "hello from api.test" not in _text(refused)
    code, out, err = await cli(data, "egress", "hosts", "--remove", "api.test", "--agent", "nobody")
    assert code != 0 and "no agent 'nobody'" in out + err
