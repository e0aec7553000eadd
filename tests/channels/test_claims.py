"""Claims of a chat's rows survive the relayer: rows the vendor did not accept stay after
the cursor for the next relayer, and a piece a relayer had at the vendor when it died is
never sent twice to Telegram (no idempotency key there) yet never lost silently; the
webhook, which has one, gets it again under the same key."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from corral.channels.relay_cursor import RelayCursors
from corral.platform import Platform
from corral.runtime.timeline import NewRow
from tests.channels.conftest import channels, connect, settle
from tests.channels.test_relay_elsewhere import another_process, bound_chat, said
from tests.channels.test_webhook import paired_message
from tests.channels.vendor_servers import FakeTelegram, FakeWebhook
from tests.runtime.conftest import ScriptWriter


async def test_rows_a_closing_relayer_could_not_send_go_out_from_the_next_one(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
    data_dir: Path,
) -> None:
    conversation_id = await bound_chat(
        ch_platform, http, telegram, write_script({"text": "Hello."})
    )
    await ch_platform.admin.set_live("channels_relay_sweep_ms", 50)
    await ch_platform.runtime.host()
    with telegram.changed:
        telegram.failures.extend([502] * 100_000)  # down while the other process relays
    async with another_process(data_dir, telegram) as other:
        await other.runtime.append(
            conversation_id, [NewRow(kind="model_turn", data={"text": "Kept."})]
        )
        assert await asyncio.to_thread(telegram.wait_for, lambda: said(telegram, "Kept\\.") >= 3)
    with telegram.changed:
        telegram.failures.clear()
        tried = said(telegram, "Kept\\.")
    # The other process closed without the vendor accepting it: the serving one sends it.
    assert await asyncio.to_thread(
        telegram.wait_for, lambda: said(telegram, "Kept\\.") == tried + 1
    )
    assert (await channels(ch_platform).check("tg"))["undelivered"] == 0


async def test_a_piece_in_flight_when_its_relayer_died_is_counted_not_resent_to_telegram(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    conversation_id = await bound_chat(
        ch_platform, http, telegram, write_script({"text": "Hello."})
    )
    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    dead = RelayCursors(ch_platform.runtime.kernel.sessions, lease_s=0)
    assert await dead.take(conversation_id) is not None
    assert await dead.sending(conversation_id, rows[-1].seq + 1, 0)  # then it died
    await ch_platform.runtime.append(
        conversation_id,
        [NewRow(kind="model_turn", data={"text": "Maybe."})],
    )
    await ch_platform.runtime.append(
        conversation_id, [NewRow(kind="model_turn", data={"text": "After."})]
    )
    await settle(ch_platform)
    assert said(telegram, "Maybe\\.") == 0 and said(telegram, "After\\.") == 1
    state = await channels(ch_platform).check("tg")
    assert state["undelivered"] == 1 and "may not have arrived" in state["lastError"]
    cards = [
        r.data
        for r in await ch_platform.runtime.conversations.rows(conversation_id)
        if r.kind == "card" and r.data.get("card") == "undelivered"
    ]
    assert [c["seq"] for c in cards] == [rows[-1].seq + 1]


async def test_a_piece_in_flight_when_its_relayer_died_is_resent_to_the_webhook_by_key(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    receiver: FakeWebhook,
    write_script: ScriptWriter,
) -> None:
    await connect(
        ch_platform,
        name="hook",
        provider="webhook",
        secret=receiver.secret,
        fields={"outbound_url": f"{receiver.url}/in", "model": write_script({"text": "Hi."})},
    )
    conversation_id = await paired_message(ch_platform, http, receiver, "hello")

    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    dead = RelayCursors(ch_platform.runtime.kernel.sessions, lease_s=0)
    assert await dead.take(conversation_id) is not None
    assert await dead.sending(conversation_id, rows[-1].seq + 1, 0)
    await ch_platform.runtime.append(
        conversation_id, [NewRow(kind="model_turn", data={"text": "Again."})]
    )
    await settle(ch_platform)
    with receiver.changed:
        calls = [c for c in receiver.calls if c.json.get("text") == "Again."]
    assert len(calls) == 1  # the receiver deduplicates by the key if the first one arrived
    assert calls[0].headers["idempotency-key"] == f"{conversation_id}:{rows[-1].seq + 1}:0"
    assert (await channels(ch_platform).check("hook"))["undelivered"] == 0
