"""Signed inbound requests a vendor would never send get a clear 4xx, never a 500: JSON nested
50 000 levels deep and a Slack timestamp of 400 digits."""

from __future__ import annotations

import hashlib
import hmac

import httpx

from corral.platform import Platform
from tests.channels.conftest import connect, slack_signed
from tests.channels.vendor_servers import FakeSlack, FakeWebhook

DEEP = b"[" * 50_000 + b"]" * 50_000


async def test_deeply_nested_json_with_a_good_signature_is_a_400(
    ch_platform: Platform, http: httpx.AsyncClient, receiver: FakeWebhook
) -> None:
    await connect(
        ch_platform,
        name="hook",
        provider="webhook",
        secret=receiver.secret,
        fields={"outbound_url": f"{receiver.url}/in"},
    )
    digest = hmac.new(receiver.secret.encode(), DEEP, hashlib.sha256).hexdigest()
    answer = await http.post(
        "/channels/hook/inbound",
        content=DEEP,
        headers={"X-Corral-Signature": f"sha256={digest}", "content-type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    assert "levels" in answer.json()["detail"] and "nothing was stored" in answer.json()["detail"]


async def test_a_slack_timestamp_of_400_digits_is_a_401(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack
) -> None:
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": "signing"},
    )
    body = b'{"type": "url_verification", "challenge": "c"}'
    headers = slack_signed("signing", body)
    stamp = "9" * 400
    base = b"v0:" + stamp.encode() + b":" + body
    headers["X-Slack-Request-Timestamp"] = stamp
    headers["X-Slack-Signature"] = "v0=" + hmac.new(b"signing", base, hashlib.sha256).hexdigest()
    answer = await http.post("/channels/sl/inbound", content=body, headers=headers)
    assert answer.status_code == 401, answer.text
    assert "5-minute window" in answer.json()["detail"]
