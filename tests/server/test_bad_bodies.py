"""Bodies JSON cannot carry back, or that a recursive parser cannot survive, get a clear 4xx
from every route, never a 500: NaN, 1e999999, lone surrogates, 50 000 levels of nesting,
invalid UTF-8, and non-JSON bodies on webhooks."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from corral.platform import Platform
from corral.strict_json import MAX_DEPTH
from tests.server.test_conversations_api import api_platform, http
from tests.server.test_workflows_api import CONTRACT, hooked_workflow, runs

__all__ = ["api_platform", "http"]  # the fixtures these tests use

JSON = {"content-type": "application/json"}
DEEP = b"[" * 50_000 + b"]" * 50_000

# Each holds what Python's json module takes but strict JSON refuses; the field is a string
# field of every body below, so a lenient parser hands the value to validation.
BAD = {
    "nan": (b'{"message": NaN, "text": NaN, "value": NaN}', "NaN"),
    "overflow": (b'{"message": 1e999999, "text": 1e999999, "value": 1e999999}', "too large"),
    "surrogate": (
        b'{"message": "\\ud800", "text": "\\ud800", "value": "\\ud800"}',
        "surrogate",
    ),
    "deep": (DEEP, f"at most {MAX_DEPTH} levels"),
}


async def route_paths(http: httpx.AsyncClient) -> list[tuple[str, str]]:
    conversation = (await http.post("/conversations", json={})).json()["id"]
    return [
        ("POST", "/chat"),
        ("POST", f"/conversations/{conversation}/messages"),
        ("POST", f"/conversations/{conversation}/inbox"),
        ("PUT", "/settings/live/http_body_max_bytes"),
    ]


@pytest.mark.parametrize("name", list(BAD))
async def test_strict_json_errors_are_a_clear_422_on_every_body_route(
    http: httpx.AsyncClient, api_platform: Platform, name: str
) -> None:
    body, says = BAD[name]
    for method, path in await route_paths(http):
        answer = await http.request(method, path, content=body, headers=JSON)
        assert answer.status_code == 422, (path, answer.text)
        [error] = answer.json()["detail"]
        assert error["type"] == "json_invalid" and says in error["msg"], (path, error)
    assert (await api_platform.live_settings())["http_body_max_bytes"] != 1e999999
    [conversation] = await api_platform.runtime.list_conversations()
    assert await api_platform.runtime.conversations.rows(conversation.id) == []


async def test_a_validation_error_echoing_undecodable_bytes_is_still_json(
    http: httpx.AsyncClient,
) -> None:
    answer = await http.post("/chat", content=b"\xff\xfe{", headers={"content-type": "text/plain"})
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["input"] == "\\xff\\xfe{"


async def test_a_body_without_a_content_type_is_parsed_strictly_too(
    http: httpx.AsyncClient,
) -> None:
    answer = await http.post("/chat", content=BAD["nan"][0])
    assert answer.status_code == 422 and "NaN" in answer.json()["detail"][0]["msg"]


async def test_finite_numbers_and_surrogate_pairs_still_pass(
    http: httpx.AsyncClient, api_platform: Platform
) -> None:
    answer = await http.put(
        "/settings/live/http_body_max_bytes", content=b'{"value": 2e6}', headers=JSON
    )
    assert answer.status_code == 200, answer.text
    titled = await http.post("/conversations", content=b'{"title": "\\ud83d\\ude00"}', headers=JSON)
    assert titled.status_code == 201 and titled.json()["title"] == "\N{GRINNING FACE}"


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        (b'{"ticket": {"id": NaN}}', JSON, 422, "NaN"),
        (b'{"ticket": {"id": 1e999999}}', JSON, 422, "too large"),
        (b'{"ticket": {"text": "\xff"}}', JSON, 422, "UTF-8"),
        (DEEP, JSON, 422, "levels"),
        (b'{"ticket": {"id": 7}}', {"content-type": "text/plain"}, 415, "application/json"),
    ],
    ids=["nan", "overflow", "invalid-utf8", "deep", "text-plain"],
)
async def test_a_webhook_refuses_what_is_not_strict_json_and_starts_nothing(
    http: httpx.AsyncClient,
    api_platform: Platform,
    tmp_path: Path,
    body: bytes,
    headers: dict[str, str],
    status: int,
    says: str,
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    answer = await http.post(
        f"/hooks/{workflow_id}/{hook_id}",
        content=body,
        headers={**headers, "Authorization": f"Bearer {key}"},
    )
    assert answer.status_code == status, answer.text
    shown = answer.json()
    assert "nothing was started" in shown["detail"]
    assert says in (shown["problems"][0]["message"] if "problems" in shown else shown["detail"])
    assert await runs(api_platform) == 0


async def test_a_root_level_contract_error_points_at_the_whole_document(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    assert CONTRACT["type"] == "object"
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    answer = await http.post(
        f"/hooks/{workflow_id}/{hook_id}", json=[1], headers={"Authorization": f"Bearer {key}"}
    )
    assert answer.status_code == 422, answer.text
    assert [p["pointer"] for p in answer.json()["problems"]] == [""]  # RFC 6901: "" is the root
