"""Fixtures of the channel tests: fake vendors on loopback, a platform that may reach them."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Iterator
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import httpx
import pytest

import corral
from corral.channels import Channels
from corral.platform import Platform
from corral.server import create_app
from corral.tools.services import Services
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules
from tests.channels.vendor_servers import FakeSlack, FakeTelegram, FakeWebhook
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, write_script

__all__ = ["write_script"]

LOOPBACK = ip_network("127.0.0.0/8")


@pytest.fixture(scope="module")
def telegram() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[FakeWebhook]:
    fake = FakeWebhook().start()
    yield fake
    fake.close()


@pytest.fixture(autouse=True)
def _fresh_fakes(telegram: FakeTelegram, slack: FakeSlack, receiver: FakeWebhook) -> None:
    for fake in (telegram, slack, receiver):
        with fake.changed:
            fake.calls.clear()
            fake.failures.clear()
            fake.holding = False
    with telegram.changed:
        telegram.updates.clear()


@pytest.fixture
async def ch_platform(
    data_dir: Path, telegram: FakeTelegram, slack: FakeSlack, receiver: FakeWebhook
) -> AsyncIterator[Platform]:
    # The only way to loopback: the explicit test allowance, never a looser default.
    web = WebAccess(addresses=AddressRules.unsafe_allowing(LOOPBACK))
    async with corral.open(
        data_dir,
        package_paths=[DEMO, RTKIT],
        services=Services(web=web),
        telegram_api_url=telegram.url,
        slack_api_url=f"{slack.url}/api",
    ) as platform:
        ports = ",".join(str(f.port) for f in (telegram, slack, receiver))
        await platform.admin.set_live("web_allowed_ports", ports)
        await platform.admin.set_live("channels_retry_base_ms", 0)
        yield platform


@pytest.fixture
async def http(ch_platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    token = await ch_platform.identity.create_token("owner")
    transport = httpx.ASGITransport(app=create_app(ch_platform))
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://corral.test",
        headers={"Authorization": f"Bearer {token.token}"},
    ) as client:
        yield client


def channels(platform: Platform) -> Channels:
    return platform.services.require(Channels)


async def connect(platform: Platform, **item: Any) -> dict[str, Any]:
    """Add a channel through the connect tool, as the local owner; its applied step."""
    result = await platform.call_tool("connect", {"add": [{"kind": "channel", **item}]})
    assert not result.is_error, result.text
    assert result.data is not None
    applied: dict[str, Any] = result.data["applied"][0]
    return applied


async def settle(platform: Platform, conversation_id: str | None = None) -> None:
    """Wait until the conversation is idle and everything queued for chats was sent."""
    if conversation_id is not None:
        await platform.runtime.wait_idle(conversation_id)
    await channels(platform).relay.drained()
    await channels(platform).decisions.drained()  # edits and notifications of decisions
    await channels(platform).relay.drained()


def tg_message(update_id: int, text: str, *, user: int = 42, chat: int = 4200) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "from": {"id": user, "is_bot": False, "first_name": "Ana", "username": f"u{user}"},
            "chat": {"id": chat, "type": "private"},
            "date": 1_700_000_000,
            "text": text,
        },
    }


def tg_press(update_id: int, data: str, *, user: int = 42, chat: int = 4200) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"cq{update_id}",
            "from": {"id": user, "is_bot": False, "first_name": "Ana"},
            "message": {"message_id": 1, "chat": {"id": chat, "type": "private"}},
            "chat_instance": "1",
            "data": data,
        },
    }


def slack_signed(secret: str, body: bytes, *, at: float | None = None) -> dict[str, str]:
    stamp = str(int(at if at is not None else time.time()))
    base = b"v0:" + stamp.encode() + b":" + body
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode()
