"""Telegram end to end: pairing, a bound conversation, retries of one update, bad secrets."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import func, select

from corral.platform import Platform
from corral.store import channel_tables as ct
from corral.store import runtime_tables as rt_tables
from tests.channels.conftest import as_json, channels, connect, settle, tg_message
from tests.channels.vendor_servers import FakeTelegram
from tests.runtime.conftest import ScriptWriter

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


async def count(platform: Platform, table: Any) -> int:
    async with platform.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(table)) or 0)


async def webhook_channel(platform: Platform, telegram: FakeTelegram, model: str) -> str:
    """Connect 'tg' in webhook mode; the secret token it registered with setWebhook."""
    await connect(
        platform,
        name="tg",
        provider="telegram",
        secret=telegram.token,
        fields={"mode": "webhook", "public_url": "https://corral.example", "model": model},
    )
    registered = telegram.method_calls("setWebhook")[-1]
    assert registered["url"] == "https://corral.example/channels/tg/inbound"
    token: str = registered["secret_token"]
    return token


async def post(http: httpx.AsyncClient, update: dict[str, Any], secret: str) -> httpx.Response:
    return await http.post(
        "/channels/tg/inbound", content=as_json(update), headers={SECRET_HEADER: secret}
    )


async def pair(
    platform: Platform, http: httpx.AsyncClient, telegram: FakeTelegram, secret: str, user: str
) -> str:
    """An unknown sender writes, gets a code, the owner approves it for ``user``."""
    await post(http, tg_message(1, "hello?"), secret)
    await settle(platform)
    code = telegram.sent[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    approved = await http.post(f"/channels/pairing/{code}/approve", json={"user": user})
    assert approved.status_code == 200, approved.text
    await settle(platform)
    return code


async def test_unknown_sender_gets_a_code_then_approved_messages_run_as_the_mapped_user(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    await ch_platform.identity.create_user("ana", "member")
    ana = await ch_platform.caller("ana")
    model = write_script(
        [
            {"when_message_contains": "<untrusted_content", "text": "Hi Ana (a.b)! " * 400},
            {"text": "the message came without its envelope"},
        ]
    )
    secret = await webhook_channel(ch_platform, telegram, model)

    first = await post(http, tg_message(1, "hello?"), secret)
    assert first.status_code == 200
    await settle(ch_platform)
    assert await count(ch_platform, rt_tables.Run) == 0  # nothing reached an agent
    reply = telegram.sent[-1]
    assert reply["chat_id"] == "4200" and "pairing code is" in reply["text"]
    code = reply["text"].split("pairing code is ")[1].split(" ")[0]
    listed = (await http.get("/channels/pairing")).json()["pairings"]
    assert [p["code"] for p in listed] == [code] and listed[0]["sender_name"] == "@u42"

    approved = await http.post(f"/channels/pairing/{code}/approve", json={"user": "ana"})
    assert approved.json()["pairing"]["user_id"] == ana.user_id
    await settle(ch_platform)
    assert "Paired" in telegram.sent[-1]["text"]
    before = len(telegram.sent)

    second = await post(http, tg_message(2, "what's up?"), secret)
    assert second.status_code == 200
    bound = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    conversation_id = bound["pairings"][0]["conversation_id"]
    await settle(ch_platform, conversation_id)
    runs = await ch_platform.runtime.runs.list_runs(conversation_id=conversation_id)
    assert [(r.user_id, r.status) for r in runs] == [(ana.user_id, "finished")]
    answer = telegram.sent[before:]
    # 5,600 characters, 7,200 once escaped for MarkdownV2: two pieces under Telegram's limit.
    assert len(answer) == 2 and all(len(m["text"]) <= 4096 for m in answer)
    assert all(m["parse_mode"] == "MarkdownV2" for m in answer)
    assert answer[0]["text"].startswith("Hi Ana \\(a\\.b\\)\\! ")
    joined = "".join(m["text"] for m in answer).replace("\\", "")
    assert joined == ("Hi Ana (a.b)! " * 400).strip()

    rows = await ch_platform.rows(conversation_id, user="ana")
    assert rows[0].kind == "user_message" and rows[0].data["text"] == "what's up?"
    assert rows[0].data["channel"]["connection"] == "tg"

    state = (await http.get("/channels/tg")).json()
    assert state["sent"] == len(telegram.sent) and state["lastInboundAt"] is not None


async def test_a_vendor_retry_of_one_update_is_processed_once(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "Once."}))
    await pair(ch_platform, http, telegram, secret, "owner")
    for _ in range(3):
        assert (await post(http, tg_message(7, "do it"), secret)).status_code == 200
    await settle(ch_platform)
    runs = await ch_platform.runtime.runs.list_runs()
    assert len(runs) == 1
    await settle(ch_platform, runs[0].conversation_id)
    assert [m["text"] for m in telegram.sent].count("Once\\.") == 1


async def test_a_bad_secret_token_is_401_and_stores_nothing(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    for headers in ({SECRET_HEADER: secret + "x"}, {SECRET_HEADER: ""}, {}):
        refused = await http.post(
            "/channels/tg/inbound", content=as_json(tg_message(1, "hi")), headers=headers
        )
        assert refused.status_code == 401 and "nothing was stored" in refused.json()["detail"]
    unknown = await http.post("/channels/nope/inbound", content=b"{}")
    assert unknown.status_code == 404
    await settle(ch_platform)
    assert await count(ch_platform, ct.ChannelEvent) == 0
    assert await count(ch_platform, ct.ChannelSender) == 0
    assert telegram.sent == []
    assert (await channels(ch_platform).check("tg"))["lastInboundAt"] is None


async def test_removal_is_a_disconnect(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, write_script({"text": "x"}))
    await pair(ch_platform, http, telegram, secret, "owner")
    removed = await http.delete("/channels/tg")
    assert removed.json() == {"name": "tg", "state": "disconnected"}
    assert telegram.method_calls("deleteWebhook")  # the vendor stops sending
    gone = await post(http, tg_message(5, "still there?"), secret)
    assert gone.status_code == 404
    assert (await http.get("/channels/tg")).status_code == 404
    assert (await http.delete("/channels/tg")).status_code == 404
    refused = await ch_platform.call_tool(
        "connect",
        {
            "add": [
                {
                    "kind": "channel",
                    "name": "tg2",
                    "provider": "telegram",
                    "secret": "1:x",
                    "fields": {"mode": "webhook", "public_url": "http://plain.example"},
                }
            ]
        },
    )
    assert refused.is_error and "https://" in refused.text
