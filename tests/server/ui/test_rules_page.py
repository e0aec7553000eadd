"""The Rules page and the ``/rules`` API: rules with where they came from, a bad rule file
named, and Remove for a remembered rule (one's own only)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import corral
from corral.platform import Platform
from corral.server import create_app
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME
from tests.conftest import DEMO


@pytest.fixture
async def ruled(data_dir: Path) -> AsyncIterator[Platform]:
    folder = data_dir / "rules"
    folder.mkdir(parents=True)
    (folder / "team.rules").write_text('prefix_rule(pattern=["git", "status"])\n')
    (folder / "broken.toml").write_text("[[prefix_rule]]\npattern = []\n")
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        yield platform


async def _client(platform: Platform, user_id: str) -> httpx.AsyncClient:
    app = create_app(platform)
    state: UiState = app.state.ui
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://corral.test",
        cookies={COOKIE_NAME: await state.sessions.begin(user_id)},
    )


async def test_rules_page_lists_and_removes_remembered_rules(ruled: Platform) -> None:
    owner = await ruled.caller()
    kept = await ruled.kernel.command_rules.remembered.remember(
        ["git", "log"],
        decision="allow",
        scope="user",
        user_id=owner.user_id,
        agent="default",
        created_by=owner.name,
        approval_id="ap_1",
    )
    member_id = await ruled.identity.create_user("mo", "member")
    async with await _client(ruled, owner.user_id) as page_owner:
        page = await page_owner.get("/ui/rules")
        assert page.status_code == 200 and 'id="nav-rules"' in page.text
        assert "<code>git status</code>" in page.text and "team.rules:1" in page.text
        assert "remembered by owner from approval ap_1 (user)" in page.text
        assert "broken.toml:1: pattern must be a list" in page.text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert token is not None
        async with await _client(ruled, member_id) as page_member:
            mine = await page_member.get("/ui/rules")
            member_token = re.search(r'name="csrf_token" value="([^"]+)"', mine.text)
            assert member_token is not None and "git log" not in mine.text
            theirs = await page_member.post(
                f"/ui/rules/{kept.rule.id}/remove", data={"csrf_token": member_token.group(1)}
            )
            assert theirs.status_code == 404
        removed = await page_owner.post(
            f"/ui/rules/{kept.rule.id}/remove", data={"csrf_token": token.group(1)}
        )
        assert removed.status_code == 303
    assert await ruled.kernel.command_rules.remembered.listing() == []


async def test_rules_api_lists_tests_and_removes(ruled: Platform) -> None:
    token = await ruled.identity.create_token("owner")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(ruled)),
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    ) as http:
        listed = (await http.get("/rules")).json()
        assert [r["id"] for r in listed["rules"]] == ["team.rules:1"]
        assert "broken.toml:1" in listed["problems"][0]
        tested = (await http.post("/rules/test", json={"command": "git status | head"})).json()
        assert tested["allowed"] and tested["rules"]["decision"] == "unmatched"
        assert [c["decision"] for c in tested["rules"]["commands"]] == ["allow", None]
        refused = await http.delete("/rules/team.rules:1")
        assert refused.status_code == 400 and "editing that file" in refused.text
