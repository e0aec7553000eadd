"""Connecting checks what it can: a token the vendor refuses is a clear 4xx, a vendor API
the fetch policy refuses names the address and the setting that allows it, and a channel
connected by another process while this one serves is taken up (polled) without a
restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import corral
from corral.platform import Platform
from corral.server import create_app
from tests.channels.conftest import channels, connect, tg_message
from tests.channels.test_relay_elsewhere import another_process
from tests.channels.vendor_servers import FakeSlack, FakeTelegram
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT


async def test_a_telegram_token_telegram_refuses_is_a_clear_4xx_and_connects_nothing(
    ch_platform: Platform, http: httpx.AsyncClient, telegram: FakeTelegram
) -> None:
    answer = await http.post(
        "/channels", json={"name": "tg", "provider": "telegram", "fields": {"bot_token": "9:X"}}
    )
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert "Telegram refused the bot token" in detail and "401" in detail
    assert "Traceback" not in answer.text and "9:X" not in answer.text
    assert (await http.get("/channels")).json()["rows"] == []


async def test_a_slack_token_slack_refuses_is_a_clear_4xx(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack
) -> None:
    body = {"bot_token": "xoxb-wrong", "signing_secret": "s"}
    answer = await http.post("/channels", json={"name": "sl", "provider": "slack", "fields": body})
    assert answer.status_code == 422, answer.text
    assert "Slack refused the bot token" in answer.json()["detail"]
    assert "invalid_auth" in answer.json()["detail"]
    assert (await http.get("/channels")).json()["rows"] == []
    body["bot_token"] = slack.token
    good = await http.post("/channels", json={"name": "sl", "provider": "slack", "fields": body})
    assert good.status_code == 201, good.text


async def test_serve_polls_a_telegram_bot_connected_by_another_process(
    ch_platform: Platform, telegram: FakeTelegram, data_dir: Path
) -> None:
    await ch_platform.admin.set_live("channels_relay_sweep_ms", 50)
    await ch_platform.runtime.host()  # this process serves
    async with another_process(data_dir, telegram) as cli:
        applied = await connect(cli, name="tg", provider="telegram", secret=telegram.token)
        assert applied["polling"] is False and "corral serve" in applied["note"]
    telegram.push(tg_message(7, "hello?"))
    assert await asyncio.to_thread(
        telegram.wait_for, lambda: any("pairing code" in m["text"] for m in telegram.sent)
    )
    assert (await channels(ch_platform).check("tg"))["polling"] is True


@pytest.fixture
async def public_only(data_dir: Path, telegram: FakeTelegram) -> AsyncIterator[Platform]:
    """A platform with the production address rules: loopback is not public."""
    async with corral.open(
        data_dir, package_paths=[DEMO, RTKIT], telegram_api_url=telegram.url
    ) as platform:
        yield platform


async def test_a_vendor_api_the_fetch_policy_refuses_names_the_address_and_the_setting(
    public_only: Platform, telegram: FakeTelegram
) -> None:
    token = await public_only.identity.create_token("owner")
    transport = httpx.ASGITransport(app=create_app(public_only))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    ) as http:
        item = {"name": "tg", "provider": "telegram", "fields": {"bot_token": telegram.token}}
        refused = await http.post("/channels", json=item)
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert f"127.0.0.1:{telegram.port}" in detail
        assert "channels_api_hosts" in detail and "Traceback" not in refused.text
        assert telegram.token not in detail

        allowed = f"127.0.0.1:{telegram.port}"
        setting = await http.put("/settings/live/channels_api_hosts", json={"value": allowed})
        assert setting.status_code == 200, setting.text
        connected = await http.post("/channels", json=item)
        assert connected.status_code == 201, connected.text
        assert telegram.method_calls("getMe")
