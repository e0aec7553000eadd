"""``/mcp`` on a real uvicorn server, driven by the SDK's own streamable-HTTP client."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ImageContent,
    TextContent,
)

from corral.errors import AlreadyDecided
from corral.platform import Platform
from corral.policy.identity import Caller
from corral.server.app import create_app
from corral.server.mcp_bridge import NOT_OVER_MCP
from tests.server.loopback import serving
from tests.shell.conftest import shells


def text_of(content: list[object]) -> str:
    return "".join(block.text for block in content if isinstance(block, TextContent))


@pytest.fixture
async def mcp_url(platform: Platform) -> AsyncIterator[str]:
    async with serving(create_app(platform)) as base:
        yield f"{base}/mcp"


async def test_a_whole_sdk_session_keeps_todos_and_waits_for_an_approval_over_http(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    headers = {"Authorization": f"Bearer {token}"}
    base = mcp_url.removesuffix("/mcp")
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
        httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as api,
    ):
        await session.initialize()
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"todos", "execute", "echo", "write_note"} <= set(listed)
        # Tools that need a run the platform's model drives are not offered at all.
        assert not NOT_OVER_MCP & set(listed)
        hints = listed["echo"].annotations
        assert hints is not None and hints.read_only_hint is True

        echoed = await session.call_tool("echo", {"text": "over mcp"})
        assert not echoed.is_error and text_of(echoed.content) == "over mcp"
        picture = await session.call_tool("picture", {})
        caption, image = picture.content
        assert isinstance(caption, TextContent) and caption.text == "a dot"
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"

        planned = await session.call_tool(
            "todos", {"plan": {"goal": "Ship it", "steps": ["one", "two"]}}
        )
        assert not planned.is_error, text_of(planned.content)
        marked = await session.call_tool(
            "todos", {"mark": {"steps": [{"id": 1, "status": "done"}]}}
        )
        # The second call sees the first's list: the session is one conversation.
        assert not marked.is_error, text_of(marked.content)
        assert "1. [done] one" in text_of(marked.content)
        assert "2. [pending] two" in text_of(marked.content)
        bad = await session.call_tool("todos", {"plan": {"todos": []}})
        assert bad.is_error and bad.structured_content == {
            "status": "error",
            "code": "invalid_arguments",
        }
        shell = await session.call_tool(
            "execute", {"command": "echo from-mcp", "background": True, "reason": "a test"}
        )
        assert shell.structured_content is not None
        assert shell.structured_content["status"] == "pending"
        shell_approval = shell.structured_content["approvalId"]
        refused = await session.call_tool("ask_question", {"questions": []})
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["code"] == "not_visible"

        pending = await session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert not pending.is_error and pending.structured_content is not None
        assert pending.structured_content["status"] == "pending"
        approval = pending.structured_content["approvalId"]
        conversation = pending.structured_content["conversationId"]
        # A person answers through the HTTP API while the MCP session stays open.
        decided = await api.post(f"/approvals/{approval}/decision", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["result"]["status"] == "pending"  # it runs after the answer
        result = (await api.get(f"/approvals/{approval}", params={"wait": 30})).json()["result"]
        assert result["status"] == "ok", result
        assert result["content"] == [{"type": "text", "text": "wrote data://n.md"}]
        started = await api.post(
            f"/approvals/{shell_approval}/decision", json={"decision": "approve"}
        )
        assert started.status_code == 200, started.text
        shown = await api.get(f"/approvals/{shell_approval}", params={"wait": 30})
        started_text = shown.json()["result"]["content"][0]["text"]
        [shell_id] = re.findall(r"Started background shell (\S+) ", started_text)
        again = await session.call_tool("echo", {"text": "still here"})
        assert text_of(again.content) == "still here"
    owner = await platform.caller("owner")
    approved = await platform.approvals.list(status="approved", user_id=owner.user_id)
    assert {r.id for r in approved} == {approval, shell_approval}
    assert {(r.profile, r.conversation_id) for r in approved} == {("balanced", conversation)}
    mine = await platform.runtime.list_conversations(user="owner")
    assert [c.id for c in mine] == [conversation]
    # The approved background shell belongs to the session's conversation and reports there.
    shell = await shells(platform).background.wait_ended(shell_id, 30)
    assert shell.conversation_id == conversation and shell.report_state != "no_conversation"


async def test_a_member_sees_only_their_tools_and_is_judged_as_themselves(
    platform: Platform, mcp_url: str
) -> None:
    await platform.identity.create_user("max", "member")
    token = (await platform.identity.create_token("max")).token
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        member_visible = {t.name for t in await platform.visible_tools(user="max")}
        assert names == member_visible - NOT_OVER_MCP
        pending = await session.call_tool("write_note", {"path": "data://m.md", "text": "x"})
        # The owner could park this; a member holds no write right on the drive.
        assert pending.is_error and pending.structured_content == {
            "status": "error",
            "code": "policy_denied",
        }
    assert await platform.pending_approvals(user="max") == []


async def test_no_or_a_bad_token_is_a_clear_401_and_sessions_stay_with_their_token(
    platform: Platform, mcp_url: str
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        bare = await http.post(mcp_url, json=initialize, headers=accept)
        assert bare.status_code == 401 and bare.headers["WWW-Authenticate"] == "Bearer"
        assert "corral tokens create" in bare.json()["detail"]
        wrong = await http.post(
            mcp_url, json=initialize, headers=accept | {"Authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401
        basic = await http.post(
            mcp_url, json=initialize, headers=accept | {"Authorization": "Basic b3duZXI6eA=="}
        )
        assert basic.status_code == 401

        owner = (await platform.identity.create_token("owner")).token
        await platform.identity.create_user("max", "member")
        other = (await platform.identity.create_token("max")).token
        opened = await http.post(
            mcp_url, json=initialize, headers=accept | {"Authorization": f"Bearer {owner}"}
        )
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        # Another user's valid token cannot ride the owner's session.
        hijack = await http.post(
            mcp_url,
            json=listing,
            headers=accept
            | {
                "Authorization": f"Bearer {other}",
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-06-18",
            },
        )
        assert hijack.status_code == 404


async def test_a_foreign_host_or_origin_is_refused_before_the_token_is_looked_at(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    port = mcp_url.split(":")[2].split("/")[0]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    sent = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=10) as http:
        rebound = await http.post(
            mcp_url,
            json=initialize,
            headers=sent
            | {"Host": f"evil.example.com:{port}", "Origin": "http://evil.example.com"},
        )
        assert rebound.status_code == 403
        assert rebound.json()["code"] == "forbidden_origin"
        assert "evil.example.com" in rebound.json()["detail"]
        page = await http.post(
            mcp_url, json=initialize, headers=sent | {"Origin": "https://evil.example.com"}
        )
        assert page.status_code == 403 and "Origin" in page.json()["detail"]
        for name in (f"localhost:{port}", f"127.0.0.1:{port}"):
            local = await http.post(
                mcp_url, json=initialize, headers=sent | {"Host": name, "Origin": f"http://{name}"}
            )
            assert local.status_code == 200, local.text


async def test_a_pending_command_names_the_families_remembering_would_allow(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    headers = {"Authorization": f"Bearer {token}"}
    base = mcp_url.removesuffix("/mcp")
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
        httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as api,
    ):
        await session.initialize()
        command = "git -C repo log --oneline -5 | head"
        pending = await session.call_tool("execute", {"command": command, "reason": "a test"})
        structured = pending.structured_content
        assert structured is not None and structured["status"] == "pending"
        assert structured["remember"] == {
            "family": ["git log", "head"],
            "exact": ["git log --oneline -5", "head"],
        }
        note = await session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert note.structured_content is not None
        assert note.structured_content["remember"] is None
        # The MCP client's user decides with remember through the HTTP API.
        decided = await api.post(
            f"/approvals/{structured['approvalId']}/decision",
            json={"decision": "approve", "remember": "family", "scope": "agent"},
        )
        assert decided.status_code == 200, decided.text
    remembered = await platform.rules.listing(await platform.caller("owner"))
    assert {" ".join(r.to_json()["pattern"]) for r in remembered} == {"git log", "head"}


async def _open_session(url: str, token: str, *, delete_on_close: bool) -> str:
    """Open an MCP session with the SDK client, call a tool in it, leave; its id."""
    seen: list[str] = []

    async def note(response: httpx2.Response) -> None:
        if "mcp-session-id" in response.headers:
            seen.append(response.headers["mcp-session-id"])

    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, event_hooks={"response": [note]}
        ) as http,
        streamable_http_client(url, http_client=http, terminate_on_close=delete_on_close) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        echoed = await session.call_tool("echo", {"text": "hi"})
        assert not echoed.is_error
    assert seen and len(set(seen)) == 1
    return seen[0]


@pytest.fixture
def heard() -> Iterator[Path]:
    """A folder the sandbox uid (which runs command hooks) can write into."""
    folder = Path(tempfile.mkdtemp(prefix="corral-mcp-end-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


async def test_an_http_session_ends_once_when_deleted_or_when_the_server_stops(
    platform: Platform, heard: Path
) -> None:
    hook = {"type": "command", "command": f"cat >> {heard}/ended; echo >> {heard}/ended"}
    await platform.admin.set_live("hooks", {"SessionEnd": [{"hooks": [hook]}]})
    token = (await platform.identity.create_token("owner")).token
    async with serving(create_app(platform)) as base:
        deleted = await _open_session(f"{base}/mcp", token, delete_on_close=True)
        left_open = await _open_session(f"{base}/mcp", token, delete_on_close=False)
    # The server's stop waited for the hooks of both sessions; each ended once.
    ended = [json.loads(line) for line in (heard / "ended").read_text().splitlines()]
    assert sorted(e["session_id"] for e in ended) == sorted([deleted, left_open])
    assert {(e["hook_event_name"], e["reason"]) for e in ended} == {("SessionEnd", "other")}


async def test_an_mcp_call_resolves_its_caller_once(
    platform: Platform, mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint resolves the token's caller per request; the call and the session's
    conversation use it instead of resolving it again."""
    resolved: list[str | None] = []
    original = platform.kernel.caller

    async def caller(user: str | None = None) -> Caller:
        resolved.append(user)
        return await original(user)

    monkeypatch.setattr(platform.kernel, "caller", caller)
    token = (await platform.identity.create_token("owner")).token
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()  # the SDK client lists once before its first call
        resolved.clear()
        first = await session.call_tool("echo", {"text": "one"})  # makes the conversation
        assert not first.is_error and len(resolved) == 1
        resolved.clear()
        second = await session.call_tool("echo", {"text": "two"})
        assert not second.is_error and len(resolved) == 1


class Elicited:
    """An MCP client's user who answers each elicitation with the next of ``answers``."""

    def __init__(self, *answers: ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[ElicitRequestFormParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        self.asked.append(params)
        return self.answers.pop(0)


async def test_a_client_that_elicits_decides_the_approval_and_gets_the_result_in_the_same_call(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    user = Elicited(
        ElicitResult(action="accept", content={"decision": "approve"}),
        ElicitResult(action="decline"),
    )
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=user) as session,
    ):
        await session.initialize()
        wrote = await session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert not wrote.is_error, text_of(wrote.content)
        assert "wrote data://n.md" in text_of(wrote.content)
        assert wrote.structured_content == {"status": "ok"}
        asked = user.asked[0]
        assert "'write_note'" in asked.message and '"path": "data://n.md"' in asked.message
        decision = asked.requested_schema["properties"]["decision"]
        assert [o["const"] for o in decision["oneOf"]] == ["approve", "deny"]
        assert "remember" not in asked.requested_schema["properties"]

        command = "git -C repo log --oneline -5 | head"
        refused = await session.call_tool("execute", {"command": command, "reason": "a test"})
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["status"] == "denied"
        assert "declined in the MCP client" in text_of(refused.content)
        remember = user.asked[1].requested_schema["properties"]["remember"]
        assert [o["const"] for o in remember["oneOf"]] == ["once", "family", "exact"]
    decided = await platform.approvals.list(status=None)
    assert {(a.tool, a.status, a.decided_by) for a in decided} == {
        ("write_note", "approved", "u_owner"),
        ("execute", "denied", "u_owner"),
    }
    assert await platform.pending_approvals() == []
    # The MCP client's answer was the first; any other surface is told so.
    (note,) = [a for a in decided if a.tool == "write_note"]
    with pytest.raises(AlreadyDecided, match=r"already decided by .* from an MCP client"):
        await platform.decide_approval(note.id, "deny", surface="web")


async def test_a_2026_client_gets_the_approval_question_as_input_required_and_retries(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    user = Elicited(
        ElicitResult(action="accept", content={"decision": "approve"}),
        ElicitResult(action="accept", content={"decision": "deny"}),
    )
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(
            streamable_http_client(mcp_url, http_client=http),
            mode="2026-07-28",
            elicitation_callback=user,
        ) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        wrote = await client.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert not wrote.is_error and "wrote data://n.md" in text_of(wrote.content)
        denied = await client.call_tool("write_note", {"path": "data://m.md", "text": "y"})
        assert denied.is_error and "denied in the MCP client" in text_of(denied.content)
    assert [q.message.split(":")[0] for q in user.asked] == [
        "Corral asks before running 'write_note'"
    ] * 2
    decided = await platform.approvals.list(status=None)
    assert sorted(a.status for a in decided) == ["approved", "denied"]


async def test_an_approval_decided_over_http_while_the_client_asks_ends_the_question(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    headers = {"Authorization": f"Bearer {token}"}
    asked = asyncio.Event()
    dropped = asyncio.Event()

    async def never_answers(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            dropped.set()
            raise
        raise AssertionError("unreachable")

    async with (
        asyncio.timeout(60),
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=never_answers) as session,
        httpx.AsyncClient(base_url=mcp_url.removesuffix("/mcp"), headers=headers) as api,
    ):
        await session.initialize()
        calling = asyncio.create_task(
            session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        )
        await asked.wait()
        (pending,) = await platform.pending_approvals()
        decided = await api.post(f"/approvals/{pending.id}/decision", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        wrote = await calling
        assert not wrote.is_error and "wrote data://n.md" in text_of(wrote.content)
        # The client was told to drop its question.
        await dropped.wait()
    (approval,) = await platform.approvals.list(status=None)
    assert (approval.status, approval.note) == ("approved", None)
    assert (await platform.decisions.get(approval.id)).surface == "http"
