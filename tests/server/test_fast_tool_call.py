"""The tool call's fast path answers byte for byte as the FastAPI route it stands in for.

Each request goes to the app twice: as served, and with :class:`FastToolCalls` taken out of
its middleware, which is the app as it answered before the fast path (every request then
reaches the FastAPI route). Status, headers and body must be the same; and the ordinary
calls must really be answered by the fast path, the unusual ones by the route.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import corral
from corral.server import fast_tool_call
from corral.server.app import create_app
from corral.server.fast_tool_call import FastToolCalls
from tests.conftest import DEMO

JSON = "application/json"
_APPROVAL_ID = re.compile(rb"ap_[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Case:
    body: bytes
    path: str = "/tools/echo/call"
    content_type: str | None = JSON
    auth: str | None = "owner"  # "owner", "ticket", or a literal Authorization value
    method: str = "POST"


ECHO = b'{"arguments": {"text": "hi \\u00e9 \\u2603 \xe2\x9c\x93"}}'
FAST = {
    "success": Case(ECHO),
    "success, every field given": Case(
        b'{"arguments": {"text": "x"}, "agent": null, "profile": "balanced"}'
    ),
    "success, lower-case scheme": Case(ECHO, auth="bearer {owner}"),
    "success, a field the model ignores": Case(b'{"arguments": {"text": "x"}, "extra": 1}'),
    "unknown tool": Case(ECHO, path="/tools/nope/call"),
    "arguments the schema refuses": Case(b'{"arguments": {}}'),
    "arguments of the wrong type": Case(b'{"arguments": {"text": 5}}'),
    "parked approval": Case(
        b'{"arguments": {"path": "h.md", "text": "x"}, "profile": "safe"}',
        path="/tools/write_note/call",
    ),
    "tool error": Case(b'{"arguments": {"kind": "tool"}}', path="/tools/explode/call"),
    "tool bug": Case(b'{"arguments": {"kind": "bug"}}', path="/tools/explode/call"),
    "unknown profile": Case(b'{"arguments": {"text": "x"}, "profile": "reckless"}'),
    "unknown agent": Case(b'{"arguments": {"text": "x"}, "agent": "nobody"}'),
    "unknown token": Case(ECHO, auth="Bearer corral_not_a_token"),
    "session ticket": Case(ECHO, auth="ticket"),
}
ROUTE = {
    "no credentials": Case(ECHO, auth=None),
    "another scheme": Case(ECHO, auth="Basic {owner}"),
    "a scheme and no token": Case(ECHO, auth="Bearer "),
    "a body that is not an object": Case(b"[1, 2]"),
    "a string body": Case(b'"text"'),
    "arguments not an object": Case(b'{"arguments": [1]}'),
    "profile not a string": Case(b'{"arguments": {}, "profile": 3}'),
    "agent not a string": Case(b'{"arguments": {}, "agent": ["a"]}'),
    "empty body": Case(b""),
    "no content type": Case(ECHO, content_type=None),
    "a content type with a charset": Case(ECHO, content_type=f"{JSON}; charset=utf-8"),
    "plain text": Case(ECHO, content_type="text/plain"),
    "a trailing slash": Case(ECHO, path="/tools/echo/call/"),
    "GET": Case(b"", method="GET"),
    "the tool listing": Case(b"", path="/tools", method="GET"),
}
REFUSED_FIRST = {  # StrictJsonBodies answers before either
    "broken JSON": Case(b'{"arguments": '),
    "NaN": Case(b'{"arguments": {"text": NaN}}'),
    "invalid UTF-8": Case(b'{"arguments": {"text": "\xff"}}'),
}


@dataclass
class Apps:
    fast: httpx.AsyncClient
    route: httpx.AsyncClient
    owner: str
    ticket: str
    taken: list[str]


def without_fast_path(app: FastAPI) -> FastAPI:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not FastToolCalls]
    return app


@pytest.fixture
async def apps(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Apps]:
    taken: list[str] = []
    get_person = fast_tool_call.get_person

    async def counted(request: Any, credentials: Any) -> Any:
        taken.append(request.url.path)
        return await get_person(request, credentials)

    monkeypatch.setattr(fast_tool_call, "get_person", counted)
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        owner = (await platform.identity.create_token("owner")).token
        ticket = await platform.identity.tickets.for_run(
            run_id="r_fast", user_id="owner", conversation_id="c_fast"
        )
        base = "http://corral.test"
        fast_app, route_app = create_app(platform), without_fast_path(create_app(platform))
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=fast_app), base_url=base) as fast,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=route_app), base_url=base) as route,
        ):
            yield Apps(fast, route, owner, ticket, taken)


async def answer(client: httpx.AsyncClient, apps: Apps, case: Case) -> httpx.Response:
    headers = {} if case.content_type is None else {"content-type": case.content_type}
    if case.auth == "owner":
        headers["authorization"] = f"Bearer {apps.owner}"
    elif case.auth == "ticket":
        headers["authorization"] = f"Bearer {apps.ticket}"
    elif case.auth is not None:
        headers["authorization"] = case.auth.format(owner=apps.owner)
    request = client.build_request(case.method, case.path, content=case.body, headers=headers)
    if case.content_type is None:
        request.headers.pop("content-type", None)
    return await client.send(request)


async def same_answers(apps: Apps, case: Case) -> httpx.Response:
    """The fast app's answer, once it is checked to be the route's."""
    expected = await answer(apps.route, apps, case)
    got = await answer(apps.fast, apps, case)
    assert _shown(got) == _shown(expected)
    return got


def _shown(response: httpx.Response) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    body = _APPROVAL_ID.sub(b"ap_", response.content)  # a new approval each time
    return response.status_code, response.headers.raw, body


@pytest.mark.parametrize("name", list(FAST))
async def test_ordinary_calls_take_the_fast_path_and_answer_as_the_route(
    apps: Apps, name: str
) -> None:
    case = FAST[name]
    got = await same_answers(apps, case)
    assert apps.taken == [case.path], "the fast path did not answer"
    assert got.status_code in {200, 400, 401, 403, 404, 422}, got.text
    assert "traceback" not in got.text.lower()


@pytest.mark.parametrize("name", list(ROUTE) + list(REFUSED_FIRST))
async def test_unusual_requests_go_on_to_the_route(apps: Apps, name: str) -> None:
    case = {**ROUTE, **REFUSED_FIRST}[name]
    got = await same_answers(apps, case)
    assert apps.taken == []
    assert got.status_code < 500, got.text


async def test_the_answers_are_the_ones_clients_rely_on(apps: Apps) -> None:
    """What each answer says, so a fast path and a route that both changed are caught too."""
    got = {}
    for name, case in {**FAST, **ROUTE}.items():
        got[name] = await answer(apps.fast, apps, case)
    assert got["success"].status_code == 200
    assert got["success"].headers["content-type"] == JSON
    assert got["success"].content.startswith(
        b'{"content":[{"type":"text","text":"hi \xc3\xa9 \xe2\x98\x83 \xe2\x9c\x93"}]'
    )
    # Errors of the call come back as results, as the route's description says.
    assert got["unknown tool"].json()["error_code"] == "not_visible"
    assert got["unknown profile"].status_code == 400
    assert got["arguments the schema refuses"].json()["error_code"] == "invalid_arguments"
    assert got["parked approval"].json()["data"]["approval_id"].startswith("ap_")
    assert got["tool error"].json()["is_error"] is True
    assert got["tool bug"].json()["is_error"] is True
    for name in ("unknown token", "no credentials", "another scheme"):
        assert got[name].status_code == 401, name
        assert got[name].headers["www-authenticate"] == "Bearer", name
    assert got["session ticket"].status_code == 403
    assert "a person decides this" in got["session ticket"].json()["detail"]
    for name in ("a body that is not an object", "arguments not an object", "empty body"):
        assert got[name].status_code == 422, name
        assert got[name].json()["detail"][0]["loc"][0] == "body", name


async def test_the_openapi_document_is_unchanged(apps: Apps) -> None:
    fast = (await apps.fast.get("/openapi.json")).json()
    route = (await apps.route.get("/openapi.json")).json()
    assert fast == route
    operation = fast["paths"]["/tools/{name}/call"]["post"]
    assert operation["requestBody"]["content"][JSON]["schema"] == {
        "$ref": "#/components/schemas/ToolCall"
    }
    assert {"200", "401", "403", "404", "422"} <= set(operation["responses"])
