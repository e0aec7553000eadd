"""Budgets over HTTP and in the web UI: an owner sets a conversation's budget, a bad one is
refused with the reason, a run shows spent/limit, and the chat page and the run's card say
it. Served by uvicorn on loopback."""

from __future__ import annotations

from pathlib import Path

import httpx

from corral.platform import Platform
from corral.server import create_app
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME
from tests.runtime.conftest import call
from tests.server.loopback import serving
from tests.server.test_conversations_api import api_platform, script

__all__ = ["api_platform"]  # the fixture these tests use


async def test_an_owner_sets_a_budget_and_the_run_card_and_header_show_spent_and_limit(
    api_platform: Platform, tmp_path: Path
) -> None:
    app = create_app(api_platform)
    state: UiState = app.state.ui
    owner = await api_platform.caller()
    token = (await api_platform.identity.create_token("owner")).token
    model = script(
        tmp_path,
        {"tool_calls": [call("echo", text="a"), call("echo", text="b")]},
        {"text": "Done."},
    )
    async with serving(app) as base:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as api:
            cid = (await api.post("/conversations", json={"model": model})).json()["id"]
            bad = await api.put(f"/conversations/{cid}/budget", json={"tool_call": 1})
            assert bad.status_code == 400, bad.text
            assert "no limit called 'tool_call'" in bad.text
            limits = {"tool_calls": 5, "per_tool": {"echo": 1}}
            put = await api.put(f"/conversations/{cid}/budget", json=limits)
            assert put.status_code == 200 and put.json() == limits
            assert (await api.get(f"/conversations/{cid}/budget")).json() == limits
            turn = (await api.post(f"/conversations/{cid}/messages", json={"message": "go"})).json()
            assert turn["status"] == "finished", turn
            echoes = [
                r["data"]["result"]
                for r in turn["rows"]
                if r["kind"] == "tool_result" and r["data"]["tool"] == "echo"
            ]
            assert sorted(e.get("error_code") or "ok" for e in echoes) == [
                "budget_exhausted",
                "ok",
            ]
            run = (await api.get(f"/runs/{turn['run_id']}")).json()
            assert run["budget"]["limits"] == {
                "tool_calls": {"spent": 1, "limit": 5},
                "per_tool.echo": {"spent": 1, "limit": 1},
            }
        cookies = {COOKIE_NAME: await state.sessions.begin(owner.user_id)}
        async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=60) as page:
            html = (await page.get(f"/ui/c/{cid}")).text
    line = "tool_calls 1/5 · per_tool.echo 1/1"
    assert f'id="budget">budget {line}</p>' in html, html
    assert f'<span class="budget">· budget {line}</span>' in html
