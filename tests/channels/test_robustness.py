"""Polling, outbound retries visible in check, the flood limit, pairing expiry and rejection,
and connect's channel kind (never a secret in its answers)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from corral.errors import NotFound
from corral.platform import Platform
from corral.store import channel_tables as ct
from corral.store.tables import utcnow
from tests.channels.conftest import as_json, channels, connect, settle, tg_message
from tests.channels.test_telegram import SECRET_HEADER, webhook_channel
from tests.channels.vendor_servers import FakeTelegram
from tests.runtime.conftest import ScriptWriter


async def test_polling_reads_get_updates_and_answers_without_a_public_url(
    ch_platform: Platform, telegram: FakeTelegram, write_script: ScriptWriter
) -> None:
    await ch_platform.runtime.host()  # only a hosting process polls
    added = await connect(
        ch_platform,
        name="poll",
        provider="telegram",
        secret=telegram.token,
        fields={"poll_timeout": "5"},
    )
    assert added["mode"] == "polling"
    assert telegram.method_calls("deleteWebhook")  # polling and a webhook exclude each other
    telegram.push(tg_message(500, "anyone there?"))
    telegram.push(tg_message(500, "anyone there?"))  # a repeated delivery
    got_code = await asyncio.to_thread(
        telegram.wait_for, lambda: any("pairing code" in c.body.decode() for c in telegram.calls)
    )
    assert got_code
    offsets = [c["offset"] for c in telegram.method_calls("getUpdates")]
    assert offsets[0] == 0
    state = await channels(ch_platform).check("poll")
    assert state["polling"] is True and state["mode"] == "polling"
    await settle(ch_platform)
    assert sum("pairing code" in m["text"] for m in telegram.sent) == 1


async def test_outbound_failures_retry_with_back_off_and_show_in_check(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    telegram.failures.extend([502, 429])
    await http.post(
        "/channels/tg/inbound",
        content=as_json(tg_message(1, "hi")),
        headers={SECRET_HEADER: secret},
    )
    await settle(ch_platform)
    assert "pairing code" in telegram.sent[-1]["text"]  # the third attempt went through
    state = (await http.get("/channels/tg")).json()
    assert (state["sent"], state["retries"], state["failures"]) == (1, 2, 0)
    assert "429" in state["lastError"]

    await ch_platform.admin.set_live("channels_send_attempts", 2)
    await ch_platform.admin.set_live("channels_outage_retry_s", 0)
    telegram.failures.extend([502, 502])
    await http.post(
        "/channels/tg/inbound",
        content=as_json(tg_message(2, "hi")),
        headers={SECRET_HEADER: secret},
    )
    await settle(ch_platform)
    state = (await http.get("/channels/tg")).json()
    assert (state["sent"], state["retries"], state["failures"]) == (1, 3, 1)
    assert "502" in state["lastError"] and state["lastErrorAt"] is not None
    assert telegram.token not in json.dumps(state)


async def test_a_flooding_chat_is_limited_with_one_notice(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    await ch_platform.admin.set_live("channels_flood_per_minute", 2)
    for update_id in range(1, 7):
        await http.post(
            "/channels/tg/inbound",
            content=as_json(tg_message(update_id, "spam")),
            headers={SECRET_HEADER: secret},
        )
    await settle(ch_platform)
    texts = [m["text"] for m in telegram.sent]
    assert sum("pairing code" in t for t in texts) == 2
    assert sum("Too many messages" in t for t in texts) == 1
    other_chat = tg_message(9, "hello", user=7, chat=7)
    await http.post(
        "/channels/tg/inbound", content=as_json(other_chat), headers={SECRET_HEADER: secret}
    )
    await settle(ch_platform)
    assert telegram.sent[-1]["chat_id"] == "7"  # one chat's flood does not silence another


async def test_pairing_codes_expire_and_rejected_senders_stay_silent(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))

    async def write(update_id: int, user: int) -> None:
        await http.post(
            "/channels/tg/inbound",
            content=as_json(tg_message(update_id, "hi", user=user, chat=user)),
            headers={SECRET_HEADER: secret},
        )
        await settle(ch_platform)

    await write(1, 11)
    old = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    async with ch_platform.sessions.begin() as session:
        await session.execute(
            update(ct.ChannelSender).values(code_expires_at=utcnow() - timedelta(seconds=1))
        )
    expired = await http.post(f"/channels/pairing/{old}/approve", json={})
    assert expired.status_code == 400 and "expired" in expired.json()["detail"]
    await write(2, 11)
    fresh = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    assert fresh != old

    await write(3, 12)
    other = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    rejected = await http.post(f"/channels/pairing/{other}/reject")
    assert rejected.json()["pairing"]["status"] == "rejected"
    before = len(telegram.sent)
    await write(4, 12)
    assert len(telegram.sent) == before  # nothing answers a rejected sender
    unknown = await http.post("/channels/pairing/NOPE1234/approve", json={})
    assert unknown.status_code == 404


async def test_only_the_connection_owner_or_an_admin_decides_its_pairings(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    await http.post(
        "/channels/tg/inbound",
        content=as_json(tg_message(1, "hi")),
        headers={SECRET_HEADER: secret},
    )
    await settle(ch_platform)
    code = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await ch_platform.identity.create_user("mia", "admin")
    await ch_platform.identity.create_user("max", "member")
    mia, max_ = await ch_platform.caller("mia"), await ch_platform.caller("max")
    found = channels(ch_platform)
    assert await found.pairing.pairings(max_) == []
    with pytest.raises(NotFound, match="no pending pairing"):
        await found.pairing.approve(code, max_)
    token = await ch_platform.identity.create_token("max")
    refused = await http.get(
        "/channels/pairing", headers={"Authorization": f"Bearer {token.token}"}
    )
    assert refused.status_code == 403 and "channels.connect" in refused.json()["detail"]
    # An administrator may decide any channel's pairings (and map to another user).
    assert [p.code for p in await found.pairing.pairings(mia)] == [code]
    approved = await found.pairing.approve(code, mia, user="max")
    assert approved.user_id == max_.user_id


async def test_connect_lists_descriptors_and_has_value_but_never_a_secret(
    ch_platform: Platform, telegram: FakeTelegram
) -> None:
    await connect(
        ch_platform,
        name="tg",
        provider="telegram",
        secret=telegram.token,
        fields={"mode": "polling", "poll_timeout": "5"},
    )
    listed = await ch_platform.call_tool("connect", {"list": ["channel", "credential"]})
    text = listed.text + json.dumps(listed.data)
    assert telegram.token not in text
    (channel_list, credential_list) = listed.data["lists"]
    (row,) = channel_list["rows"]
    fields = {f["name"]: f["hasValue"] for f in row["fields"]}
    assert fields["bot_token"] is True and fields["webhook_secret"] is True
    assert fields["public_url"] is False
    providers = {
        d["provider"]: [f["name"] for f in d["fields"]] for d in channel_list["descriptors"]
    }
    assert "signing_secret" in providers["slack"] and "outbound_url" in providers["webhook"]
    assert all("hasValue" in c and "value" not in c for c in credential_list["rows"])

    checked = await ch_platform.call_tool("connect", {"check": [{"kind": "channel", "name": "tg"}]})
    assert checked.data["applied"][0]["state"] == "connected"
    bad = await ch_platform.call_tool(
        "connect",
        {"add": [{"kind": "channel", "name": "sl", "provider": "slack", "secret": "xoxb-1"}]},
    )
    assert bad.is_error and "signing_secret" in bad.text and "xoxb-1" not in bad.text
    removed = await ch_platform.call_tool(
        "connect", {"remove": [{"kind": "channel", "name": "tg"}]}
    )
    assert removed.data["applied"][0]["state"] == "disconnected"
    assert (await channels(ch_platform).check("tg"))["state"] == "absent"
    creds = await ch_platform.credentials.entries(user_id=(await ch_platform.caller()).user_id)
    assert [c.name for c in creds] == []  # the channel's secrets went with it
