"""Tool Access, Settings, Workflows and Channels pages over HTTP: they change what the platform's
own methods change, check what those check, and refuse members where the API does."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest

from corral.channels import Channels
from corral.platform import Platform
from corral.server import create_app
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME


@pytest.fixture
async def browse(platform: Platform) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """A signed-in client for the owner and one for a reader (a role with drive.read only)."""
    app = create_app(platform)
    state: UiState = app.state.ui
    await platform.identity.create_role("reader", ["drive.read"])
    member = await platform.identity.create_user("mo", "reader")
    owner = (await platform.caller()).user_id
    clients = {}
    for name, user_id in (("owner", owner), ("member", member)):
        clients[name] = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://corral.test",
            cookies={COOKIE_NAME: await state.sessions.begin(user_id)},
        )
    yield clients
    for client in clients.values():
        await client.aclose()


async def _csrf(client: httpx.AsyncClient, page: str = "/ui") -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', (await client.get(page)).text)
    assert found is not None
    return found.group(1)


async def test_tool_access_switches_a_tool_and_freezes_a_list(
    browse: dict[str, httpx.AsyncClient], platform: Platform
) -> None:
    owner = browse["owner"]
    page = await owner.get("/ui/agents")
    assert page.status_code == 200 and "all tools" in page.text
    token = await _csrf(owner)
    off = await owner.post(
        "/ui/agents/default/tools/web_fetch", data={"enabled": "false", "csrf_token": token}
    )
    assert off.status_code == 303
    state = (await platform.kernel.config.snapshot()).state
    assert "web_fetch" in state.agents["default"].tools_off
    frozen = await owner.post(
        "/ui/agents/default/mode",
        data={"mode": "custom", "tools": ["", "execute", "todos"], "csrf_token": token},
    )
    assert frozen.status_code == 303
    selection = (await platform.kernel.config.snapshot()).state.agents["default"]
    assert selection.mode == "custom" and selection.allowlist == {"execute", "todos"}
    assert "custom allowlist (frozen)" in (await owner.get("/ui/agents")).text
    unknown = await owner.post(
        "/ui/agents/default/tools/no_such_tool", data={"enabled": "true", "csrf_token": token}
    )
    assert unknown.status_code in (400, 404) and "no_such_tool" in unknown.text

    member = browse["member"]
    shown = await member.get("/ui/agents")
    assert shown.status_code == 200
    assert "your grants already hide it (needs core.exec)" in shown.text
    refused = await member.post(
        "/ui/agents/default/tools/execute",
        data={"enabled": "false", "csrf_token": await _csrf(member)},
    )
    assert refused.status_code == 403 and "admin.settings" in refused.text


async def test_settings_are_validated_as_the_api_does(
    browse: dict[str, httpx.AsyncClient], platform: Platform
) -> None:
    owner = browse["owner"]
    page = await owner.get("/ui/settings")
    assert page.status_code == 200 and "perf_slow_tool_ms" in page.text
    assert "A tool call taking at least this long" in page.text
    token = await _csrf(owner, "/ui/settings")
    saved = await owner.post(
        "/ui/settings/perf_slow_tool_ms", data={"value": "5000", "csrf_token": token}
    )
    assert saved.status_code == 303
    assert (await platform.live_settings())["perf_slow_tool_ms"] == 5000
    bad = await owner.post(
        "/ui/settings/perf_slow_tool_ms", data={"value": "soon", "csrf_token": token}
    )
    assert bad.status_code in (400, 422) and "perf_slow_tool_ms" in bad.text
    assert "Traceback" not in bad.text
    missing = await owner.post("/ui/settings/nope", data={"value": "1", "csrf_token": token})
    assert missing.status_code == 404 and "no live setting named &#39;nope&#39;" in missing.text
    assert (await browse["member"].get("/ui/settings")).status_code == 403


async def test_workflows_list_and_show(
    browse: dict[str, httpx.AsyncClient], platform: Platform
) -> None:
    owner = browse["owner"]
    assert "No workflows yet" in (await owner.get("/ui/workflows")).text
    caller = await platform.caller()
    workflow = await platform.workflows.set(
        {"title": "Digest", "instruction": "Summarise the day"}, caller
    )
    listed = await owner.get("/ui/workflows")
    assert f"/ui/workflows/{workflow.id}" in listed.text and "Digest" in listed.text
    shown = await owner.get(f"/ui/workflows/{workflow.id}")
    assert shown.status_code == 200 and "Summarise the day" in shown.text
    assert (await owner.get("/ui/workflows/w_missing")).status_code == 404


async def test_channels_panel_needs_the_grant_a_csrf_token_and_the_services_rules(
    browse: dict[str, httpx.AsyncClient], platform: Platform
) -> None:
    store = platform.services.require(Channels).store
    await platform.identity.create_role("linker", ["channels.connect"])
    lin = await platform.identity.create_user("lin", "linker")
    await store.add_connection("lins", "webhook", lin, {"url": "https://example.invalid/"})
    owner_id = (await platform.caller()).user_id
    await store.add_connection("owners", "webhook", owner_id, {"url": "https://example.invalid/"})
    await store.count("lins", "failures", error="HTTP 401 from the receiver")
    sam = "Sam <img src=x onerror=alert(1)>"  # a vendor's display name is the sender's text
    mine, _ = await store.pending("lins", "s1", "c1", sam, 600)
    theirs, _ = await store.pending("owners", "s2", "c2", "Tess", 600)
    app = create_app(platform)
    state: UiState = app.state.ui
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://corral.test",
        cookies={COOKIE_NAME: await state.sessions.begin(lin)},
    ) as linker:
        member, owner = browse["member"], browse["owner"]
        assert 'id="nav-channels"' not in (await member.get("/ui")).text
        denied = await member.get("/ui/channels")
        assert denied.status_code == 403 and "channels.connect" in denied.text
        token = await _csrf(member)
        post = await member.post(
            f"/ui/channels/pairing/{theirs.code}/reject", data={"csrf_token": token}
        )
        assert post.status_code == 403 and "channels.connect" in post.text

        unsigned = await owner.post(f"/ui/channels/pairing/{theirs.code}/approve", data={})
        forged = await owner.post(
            f"/ui/channels/pairing/{theirs.code}/reject", data={"csrf_token": "0" * 64}
        )
        assert unsigned.status_code == forged.status_code == 403 and "CSRF" in forged.text

        page = await linker.get("/ui/channels")
        assert 'id="nav-channels"' in page.text
        assert mine.code in page.text and "lins" in page.text
        assert "HTTP 401 from the receiver" in page.text  # the connection's last error
        assert theirs.code not in page.text and "owners" not in page.text  # not theirs
        assert "<img" not in page.text and "Sam &lt;img src=x" in page.text
        token = await _csrf(linker, "/ui/channels")
        other = await linker.post(
            f"/ui/channels/pairing/{mine.code}/approve", data={"csrf_token": token, "user": "owner"}
        )
        assert other.status_code == 403 and "admin.settings" in other.text
        foreign = await linker.post(
            f"/ui/channels/pairing/{theirs.code}/reject", data={"csrf_token": token}
        )
        assert foreign.status_code == 404
        assert [s.status for s in await store.senders()] == ["pending", "pending"]

        rejected = await linker.post(
            f"/ui/channels/pairing/{mine.code}/reject", data={"csrf_token": token}
        )
        assert rejected.status_code == 303
        shown = await linker.get(rejected.headers["location"])
        assert "rejected Sam &lt;img" in shown.text and "<img" not in shown.text
        decided = {s.sender_name: s.status for s in await store.senders(status=None)}
        assert decided == {sam: "rejected", "Tess": "pending"}
