"""``/mcp`` on a real uvicorn server, driven by the SDK's own streamable-HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from corral.platform import Platform
from corral.server.app import create_app
from tests.server.loopback import serving


def text_of(content: list[object]) -> str:
    return "".join(block.text for block in content if isinstance(block, TextContent))


@pytest.fixture
async def mcp_url(platform: Platform) -> AsyncIterator[str]:
    async with serving(create_app(platform)) as base:
        yield f"{base}/mcp"


async def test_the_sdk_client_lists_calls_and_parks_as_the_tokens_user(
    platform: Platform, mcp_url: str
) -> None:
    token = (await platform.identity.create_token("owner")).token
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"todos", "echo", "write_note"} <= set(listed)
        hints = listed["echo"].annotations
        assert hints is not None and hints.read_only_hint is True

        echoed = await session.call_tool("echo", {"text": "over mcp"})
        assert not echoed.is_error and text_of(echoed.content) == "over mcp"

        todos = await session.call_tool("todos", {"plan": {"steps": ["one"]}})
        assert todos.structured_content == {"status": "error", "code": "no_conversation"}
        bad = await session.call_tool("todos", {"plan": {"todos": []}})
        assert bad.is_error and bad.structured_content == {
            "status": "error",
            "code": "invalid_arguments",
        }

        pending = await session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert not pending.is_error and pending.structured_content is not None
        assert pending.structured_content["status"] == "pending"
        approval = pending.structured_content["approvalId"]
    # Parked as the token's user, under the endpoint's profile.
    [record] = await platform.pending_approvals()
    assert record.id == approval and record.profile == "balanced"
    owner = await platform.caller("owner")
    assert record.user_id == owner.user_id


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
        assert names == member_visible
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
