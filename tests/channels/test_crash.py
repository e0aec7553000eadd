"""A `corral serve` killed (SIGKILL) while a vendor call is in flight: its claim on the
chat lapses after ``channels_claim_lease_s`` and the next process takes it over. The
piece that was at the vendor is sent again to the webhook under the same Idempotency-Key,
and for Telegram (no such key) counted undelivered with a card, never sent twice; the rows
after it go out."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx

from corral.platform import Platform
from corral.runtime.timeline import NewRow
from tests.channels.conftest import channels, connect
from tests.channels.test_relay_elsewhere import bound_chat
from tests.channels.test_restart import serving
from tests.channels.test_webhook import paired_message
from tests.channels.vendor_servers import FakeTelegram, FakeVendor, FakeWebhook
from tests.runtime.conftest import ScriptWriter


def texts(fake: FakeVendor, text: str) -> list[dict[str, str]]:
    """The headers of every outbound call carrying ``text``."""
    with fake.changed:
        calls = list(fake.calls)
    found = []
    for c in calls:
        try:
            body = c.json
        except ValueError:
            continue
        if isinstance(body, dict) and body.get("text") == text:
            found.append(c.headers)
    return found


async def until(fake: FakeVendor, text: str, count: int) -> bool:
    return await asyncio.to_thread(fake.wait_for, lambda: len(texts(fake, text)) >= count, 90.0)


async def kill_mid_call(
    platform: Platform,
    data_dir: Path,
    telegram: FakeTelegram,
    vendor: FakeVendor,
    conversation_id: str,
    first: str,
) -> None:
    """Serve; append two rows while the vendor holds every call; SIGKILL serve while the
    first row's call is in flight; serve again with the vendor answering."""
    await platform.admin.set_live("channels_claim_lease_s", 2)
    await platform.admin.set_live("channels_relay_sweep_ms", 100)
    channels(platform).relay.bound.clear()  # this test process leaves the chat to serve
    vendor.hold(True)
    with serving(data_dir, telegram) as doomed:
        await platform.runtime.append(
            conversation_id, [NewRow(kind="model_turn", data={"text": first})]
        )
        assert await until(vendor, texts_key(vendor, first), 1)
        await platform.runtime.append(
            conversation_id, [NewRow(kind="model_turn", data={"text": "After."})]
        )
        doomed.send_signal(signal.SIGKILL)
        assert await asyncio.to_thread(doomed.wait, 30) == -signal.SIGKILL
    vendor.hold(False)
    with serving(data_dir, telegram):
        assert await until(vendor, texts_key(vendor, "After."), 1)


def texts_key(vendor: FakeVendor, text: str) -> str:
    """How ``text`` reaches ``vendor`` (Telegram's MarkdownV2 escapes the full stop)."""
    return text.replace(".", "\\.") if isinstance(vendor, FakeTelegram) else text


async def test_telegram_counts_the_piece_in_flight_undelivered_and_never_sends_it_twice(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
    data_dir: Path,
) -> None:
    conversation_id = await bound_chat(
        ch_platform, http, telegram, write_script({"text": "Hello."})
    )
    await ch_platform.admin.set_live("channels_api_hosts", f"127.0.0.1:{telegram.port}")
    await kill_mid_call(ch_platform, data_dir, telegram, telegram, conversation_id, "Kept.")
    assert len(texts(telegram, "Kept\\.")) == 1
    assert len(texts(telegram, "After\\.")) == 1
    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    cards = [r.data for r in rows if r.kind == "card" and r.data.get("card") == "undelivered"]
    assert len(cards) == 1 and "may not have arrived" in cards[0]["reason"]
    assert (await channels(ch_platform).check("tg"))["undelivered"] == 1


async def test_the_webhook_gets_the_piece_in_flight_again_under_the_same_key(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    receiver: FakeWebhook,
    write_script: ScriptWriter,
    data_dir: Path,
) -> None:
    await connect(
        ch_platform,
        name="hook",
        provider="webhook",
        secret=receiver.secret,
        fields={"outbound_url": f"{receiver.url}/in", "model": write_script({"text": "Hi."})},
    )
    conversation_id = await paired_message(ch_platform, http, receiver, "hello")
    await ch_platform.admin.set_live("channels_api_hosts", f"127.0.0.1:{receiver.port}")

    await kill_mid_call(ch_platform, data_dir, telegram, receiver, conversation_id, "Again.")
    again = texts(receiver, "Again.")
    assert len(again) == 2  # the receiver deduplicates by the key
    assert again[0]["idempotency-key"] == again[1]["idempotency-key"]
    assert (await channels(ch_platform).check("hook"))["undelivered"] == 0
