"""Who may reach a workflow: every workflow route walked as a second user, the tool's verbs,
the UI pages and the share.

The attack: a member (and a user who may write workflows) takes the owner's ids and tries every
route with them. Each answer must equal, byte for byte once the ids are swapped, the answer for
ids that do not exist; nothing may start, stop or change.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastapi.routing import APIRoute
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from corral.platform import Platform
from corral.server import create_app
from corral.server.routes import workflows as workflow_routes
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME
from tests.runtime.conftest import call
from tests.server.loopback import serving
from tests.server.test_conversations_api import api_platform, http, script
from tests.server.test_mcp_http import text_of
from tests.server.test_workflows_api import hooked_workflow, runs

__all__ = ["api_platform", "http"]  # the fixtures these tests use

UNKNOWN = {"workflow_id": "w_000000000000", "run_id": "r_000000000000"}
UNKNOWN_HOOK, UNKNOWN_KEY = "h_000000000000", "k_000000000000"


@dataclass(frozen=True, slots=True)
class Owned:
    workflow_id: str
    hook_id: str
    key_id: str
    finished_run: str
    held_run: str


@pytest.fixture
async def owned(http: httpx.AsyncClient, tmp_path: Path) -> Owned:
    """The owner's workflow with a webhook, a key, a finished run and a run held at a gate."""
    workflow_id, hook_id, _ = await hooked_workflow(http, tmp_path)
    [hook] = (await http.get(f"/workflows/{workflow_id}/hooks")).json()["hooks"]
    finished = await http.post(f"/workflows/{workflow_id}/runs", json={"wait_seconds": 60})
    assert finished.json()["answer"] == "Triaged.", finished.text
    gated = await http.post(
        "/workflows",
        json={
            "title": "Held",
            "instruction": "wait",
            "model": script(tmp_path, {"tool_calls": [call("gate", name="never")]}),
        },
    )
    held = await http.post(f"/workflows/{gated.json()['workflow_id']}/runs", json={})
    return Owned(
        workflow_id=workflow_id,
        hook_id=hook_id,
        key_id=hook["keys"][0]["key_id"],
        finished_run=finished.json()["run_id"],
        held_run=held.json()["run_id"],
    )


async def user_client(
    platform: Platform, http: httpx.AsyncClient, name: str, role: str
) -> httpx.AsyncClient:
    await platform.identity.create_user(name, role)
    token = await platform.identity.create_token(name)
    return httpx.AsyncClient(
        transport=http._transport,
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    )


@pytest.fixture
async def strangers(
    api_platform: Platform, http: httpx.AsyncClient
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """A member (read, dispatch) and an author (read, write, dispatch): neither owns anything."""
    await api_platform.identity.create_role(
        "author", ["workflow.read", "workflow.write", "workflow.dispatch"]
    )
    clients = {
        "member": await user_client(api_platform, http, "max", "member"),
        "author": await user_client(api_platform, http, "ada", "author"),
    }
    yield clients
    for client in clients.values():
        await client.aclose()


# Every workflow route that takes an id, with a body that would be accepted from its owner.
CASES: dict[tuple[str, str], Any] = {
    ("GET", "/workflows/{workflow_id}"): None,
    ("PATCH", "/workflows/{workflow_id}"): {"title": "Mine now"},
    ("DELETE", "/workflows/{workflow_id}"): None,
    ("GET", "/workflows/{workflow_id}/versions"): None,
    ("PUT", "/workflows/{workflow_id}/delivery"): {"channels": ["ops-slack"]},
    ("POST", "/workflows/{workflow_id}/archive"): None,
    ("POST", "/workflows/{workflow_id}/restore"): None,
    ("POST", "/workflows/{workflow_id}/runs"): {"wait_seconds": 5},
    ("GET", "/workflows/{workflow_id}/runs"): None,
    ("GET", "/workflow-runs/{run_id}"): None,
    ("POST", "/workflow-runs/{run_id}/cancel"): None,
    ("GET", "/workflows/{workflow_id}/hooks"): None,
    ("POST", "/workflows/{workflow_id}/hooks"): {"body_schema": {"type": "object"}},
    ("DELETE", "/workflows/{workflow_id}/hooks/{hook_id}"): None,
    ("POST", "/workflows/{workflow_id}/hooks/{hook_id}/keys"): None,
    ("DELETE", "/workflows/{workflow_id}/keys/{key_id}"): None,
}


# The same run reached from the side: its Run, its conversation, the delegate views.
ADJACENT: dict[tuple[str, str], Any] = {
    ("GET", "/runs/{run_id}"): None,
    ("POST", "/runs/{run_id}/stop"): None,
    ("GET", "/delegates/{run_id}"): None,
    ("POST", "/delegates/{run_id}/stop"): None,
    ("POST", "/delegates/{run_id}/continue"): {"message": "go on"},
    ("GET", "/conversations/{conversation_id}"): None,
    ("GET", "/conversations/{conversation_id}/meta"): None,
    ("GET", "/conversations/{conversation_id}/delegates"): None,
    ("GET", "/conversations/{conversation_id}/events?follow=false"): None,
    ("POST", "/conversations/{conversation_id}/messages"): {"message": "tell me the answer"},
}


def routes_with_ids() -> set[tuple[str, str]]:
    found = set()
    for route in workflow_routes.router.routes:
        assert isinstance(route, APIRoute)
        if "{" in route.path and "{name}" not in route.path:
            found |= {(method, route.path) for method in route.methods}
    return found


def test_every_workflow_route_with_an_id_is_walked() -> None:
    """A new route must join the walk below before it can land."""
    assert routes_with_ids() == set(CASES)


async def ask(
    client: httpx.AsyncClient, method: str, template: str, ids: dict[str, str], body: Any
) -> httpx.Response:
    path = template.format(**ids)
    return await client.request(method, path, json=body)


@pytest.mark.parametrize("who", ["member", "author"])
async def test_a_stranger_learns_nothing_a_wrong_id_would_not_tell_and_changes_nothing(
    who: str,
    http: httpx.AsyncClient,
    api_platform: Platform,
    owned: Owned,
    strangers: dict[str, httpx.AsyncClient],
) -> None:
    stranger = strangers[who]
    real = {
        "workflow_id": owned.workflow_id,
        "hook_id": owned.hook_id,
        "key_id": owned.key_id,
    }
    fake = {
        **UNKNOWN,
        "hook_id": UNKNOWN_HOOK,
        "key_id": UNKNOWN_KEY,
        "conversation_id": "c_000000000000",
    }
    before_runs = await runs(api_platform)
    before = (await http.get(f"/workflows/{owned.workflow_id}")).json()
    escaped = []
    for (method, template), body in {**CASES, **ADJACENT}.items():
        for run_id in (owned.finished_run, owned.held_run):
            run = (await http.get(f"/workflow-runs/{run_id}")).json()
            ids = {**real, "run_id": run_id, "conversation_id": run["conversation_id"]}
            answer = await ask(stranger, method, template, ids, body)
            blind = await ask(stranger, method, template, fake, body)
            seen = answer.text
            for name, value in ids.items():
                seen = seen.replace(value, fake[name])
            same = (answer.status_code, seen) == (blind.status_code, blind.text)
            if not same or answer.status_code not in (403, 404):
                escaped.append(f"{method} {template}: {answer.status_code} {answer.text[:100]}")
    assert escaped == [], "\n".join(escaped)
    assert await runs(api_platform) == before_runs
    after = (await http.get(f"/workflows/{owned.workflow_id}")).json()
    assert after["version"] == before["version"] and after["setup"] == before["setup"]
    held = (await http.get(f"/workflow-runs/{owned.held_run}")).json()
    assert held["status"] != "stopped"
    [hook] = (await http.get(f"/workflows/{owned.workflow_id}/hooks")).json()["hooks"]
    assert [k["revoked"] for k in hook["keys"]] == [False]
    # Listing does not hand out the ids either.
    listed = (await stranger.get("/workflows")).json()["workflows"]
    assert listed == []


async def test_the_tool_refuses_a_stranger_every_verb_as_an_unknown_id(
    api_platform: Platform, owned: Owned, strangers: dict[str, httpx.AsyncClient]
) -> None:
    before = await runs(api_platform)
    for verb in (
        {"run": {"workflow_id": owned.workflow_id}},
        {"get": {"workflow_id": owned.workflow_id}},
        {"get": {"workflow_id": owned.workflow_id, "run_id": owned.finished_run}},
    ):
        result = await api_platform.call_tool("workflow", verb, user="max")
        text = str(result.to_json())
        assert result.is_error, text
        assert f"no workflow {owned.workflow_id!r}" in text, text
        assert "Triaged." not in text
    listed = await api_platform.call_tool("workflow", {"list": {}}, user="max")
    assert owned.workflow_id not in str(listed.to_json())
    assert await runs(api_platform) == before


async def test_the_ui_pages_hide_the_owners_workflow(
    api_platform: Platform, owned: Owned, strangers: dict[str, httpx.AsyncClient]
) -> None:
    app = create_app(api_platform)
    state: UiState = app.state.ui
    member = (await api_platform.caller("max")).user_id
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://corral.test",
        cookies={COOKIE_NAME: await state.sessions.begin(member)},
    ) as page:
        listed = await page.get("/ui/workflows")
        assert listed.status_code == 200 and owned.workflow_id not in listed.text
        shown = await page.get(f"/ui/workflows/{owned.workflow_id}")
        blind = await page.get(f"/ui/workflows/{UNKNOWN['workflow_id']}")
        assert shown.status_code == blind.status_code == 404
        assert "Triaged" not in shown.text and owned.finished_run not in shown.text
        # The run's transcript and delegate pages, by the ids a snapshot would show.
        run = await api_platform.runtime.runs.get(owned.finished_run)
        for real, unknown in (
            (f"/ui/c/{run.conversation_id}", "/ui/c/c_000000000000"),
            (f"/ui/delegates/{run.id}", "/ui/delegates/r_000000000000"),
        ):
            answer, blind = await page.get(real), await page.get(unknown)
            assert answer.status_code == blind.status_code == 404, real
            assert "Triaged" not in answer.text
        # Shared, the page shows the runs; no link to the owner's transcripts, which would 404.
        await api_platform.workflows.set(
            {"workflow_id": owned.workflow_id, "shared_with": ["user:max"]},
            await api_platform.caller(),
        )
        shared = await page.get(f"/ui/workflows/{owned.workflow_id}")
        assert shared.status_code == 200 and owned.finished_run in shared.text
        assert f"/ui/c/{run.conversation_id}" not in shared.text


async def test_a_share_lets_a_user_or_role_run_and_read_as_the_owner_and_unsharing_ends_it(
    http: httpx.AsyncClient,
    api_platform: Platform,
    owned: Owned,
    strangers: dict[str, httpx.AsyncClient],
) -> None:
    member = strangers["member"]
    wid = owned.workflow_id
    shared = await http.patch(f"/workflows/{wid}", json={"shared_with": ["user:max"]})
    assert shared.status_code == 200 and shared.json()["changed"] == ["shared_with"]
    assert [w["workflow_id"] for w in (await member.get("/workflows")).json()["workflows"]] == [wid]
    assert (await member.get(f"/workflows/{wid}")).json()["setup"]["shared_with"] == ["user:max"]
    started = await member.post(f"/workflows/{wid}/runs", json={"wait_seconds": 60})
    assert started.status_code == 201 and started.json()["answer"] == "Triaged."
    run = await api_platform.runtime.runs.get(started.json()["run_id"])
    owner = await api_platform.caller()
    assert run.user_id == owner.user_id  # the owner's rights, as the tool description says
    # A sharee cancels only their own runs, never the owner's.
    theirs = await member.post(f"/workflow-runs/{owned.finished_run}/cancel")
    assert theirs.status_code == 403 and "runs you started" in theirs.json()["detail"]
    mine = await member.post(f"/workflow-runs/{started.json()['run_id']}/cancel")
    assert mine.status_code == 200 and mine.json()["status"] == "finished"
    # A sharee may not change the share (or anything else) of the owner's workflow.
    author = strangers["author"]
    await http.patch(f"/workflows/{wid}", json={"shared_with": ["role:author"]})
    assert (await member.get(f"/workflows/{wid}")).status_code == 404
    assert (await author.get(f"/workflows/{wid}")).status_code == 200
    grab = await author.patch(f"/workflows/{wid}", json={"shared_with": ["role:member"]})
    assert grab.status_code == 403 and "owner" in grab.json()["detail"]
    await http.patch(f"/workflows/{wid}", json={"shared_with": []})
    assert (await author.get(f"/workflows/{wid}")).status_code == 404
    assert (await author.get(f"/workflow-runs/{started.json()['run_id']}")).status_code == 404


@pytest.mark.parametrize(
    "entries",
    [["max"], ["user:"], ["user:max bob"], ["group:ops"], ["user:../x"], "user:max"],
)
async def test_a_malformed_share_is_refused_with_what_to_send(
    http: httpx.AsyncClient, owned: Owned, entries: Any
) -> None:
    answer = await http.patch(f"/workflows/{owned.workflow_id}", json={"shared_with": entries})
    assert answer.status_code == 422, answer.text
    assert "user:NAME" in answer.json()["detail"] or "user:max" in answer.json()["detail"]


async def test_over_mcp_a_stranger_can_neither_run_nor_read_the_owners_workflow(
    api_platform: Platform, owned: Owned, strangers: dict[str, httpx.AsyncClient]
) -> None:
    token = (await api_platform.identity.create_token("max", "mcp")).token
    before = await runs(api_platform)
    async with (
        serving(create_app(api_platform)) as base,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as client,
        streamable_http_client(f"{base}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for verb in (
            {"run": {"workflow_id": owned.workflow_id, "wait_seconds": 5}},
            {"get": {"workflow_id": owned.workflow_id, "run_id": owned.finished_run}},
            {"list": {}},
        ):
            answer = await session.call_tool("workflow", verb)
            shown = text_of(answer.content) + str(answer.structured_content)
            assert "Triaged." not in shown and owned.finished_run not in shown, shown
            assert "list" in verb or f"no workflow {owned.workflow_id!r}" in shown, shown
    assert await runs(api_platform) == before


async def test_only_a_person_shares_never_a_script_a_template_or_the_tool(
    http: httpx.AsyncClient, api_platform: Platform, owned: Owned
) -> None:
    """An agent under a prompt injection must not lend its user's workflow to another account."""
    run = await api_platform.runtime.runs.get(owned.held_run)
    ticket = await api_platform.identity.tickets.for_run(
        run_id=run.id, user_id=run.user_id, conversation_id=run.conversation_id
    )
    as_script = {"Authorization": f"Bearer {ticket}"}
    grab = {"shared_with": ["user:max"]}
    for method, path, body in (
        ("PATCH", f"/workflows/{owned.workflow_id}", grab),
        ("POST", "/workflows", {"title": "t", "instruction": "i", **grab}),
    ):
        answer = await http.request(method, path, json=body, headers=as_script)
        assert answer.status_code == 403 and "a person shares" in answer.json()["detail"]
    # The same script may still change what is not a share.
    renamed = await http.patch(
        f"/workflows/{owned.workflow_id}", json={"title": "Renamed"}, headers=as_script
    )
    assert renamed.status_code == 200, renamed.text
    # Nor through a template it saves and then makes a workflow from.
    saved = await http.put(
        "/workflow-templates/leaky",
        json={"setup": {"instruction": "i", **grab}},
        headers=as_script,
    )
    assert saved.status_code == 422 and "cannot hold shared_with" in saved.json()["detail"]
    made = await http.put("/workflow-templates/plain", json={"setup": {"instruction": "i"}})
    assert made.status_code == 200
    from_template = await http.post(
        "/workflow-templates/plain/workflows", json={"title": "t", **grab}, headers=as_script
    )
    assert from_template.status_code == 403
    # Nor through the tool (its schema has no shared_with; a person's route or CLI does it).
    result = await api_platform.call_tool(
        "workflow", {"set": {"workflow_id": owned.workflow_id, **grab}}
    )
    assert result.is_error and result.error_code == "invalid_arguments"
    shown = (await http.get(f"/workflows/{owned.workflow_id}")).json()
    assert shown["setup"]["shared_with"] == []
