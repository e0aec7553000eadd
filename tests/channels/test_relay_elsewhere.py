"""Rows another process stores in a bound conversation still reach the chat, once: the
serving process's sweep sends what no process sent, and a chat's cursor is claimed by
compare-and-set so two processes relaying the same rows send them once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

import corral
from corral.channels.relay_cursor import RelayCursors
from corral.platform import Platform
from corral.runtime.timeline import NewRow
from corral.tools.services import Services
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules
from tests.channels.conftest import LOOPBACK, channels, settle
from tests.channels.test_bound import bound_conversation
from tests.channels.test_telegram import pair, post, webhook_channel
from tests.channels.vendor_servers import FakeTelegram
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter


@asynccontextmanager
async def another_process(data_dir: Path, telegram: FakeTelegram) -> AsyncIterator[Platform]:
    """A second platform on the same data folder, as a CLI command or a worker would be."""
    web = WebAccess(addresses=AddressRules.unsafe_allowing(LOOPBACK))
    async with corral.open(
        data_dir,
        package_paths=[DEMO, RTKIT],
        services=Services(web=web),
        telegram_api_url=telegram.url,
    ) as platform:
        yield platform


def said(telegram: FakeTelegram, text: str) -> int:
    return sum(1 for message in telegram.sent if message["text"] == text)


async def bound_chat(
    platform: Platform, http: httpx.AsyncClient, telegram: FakeTelegram, model: str
) -> str:
    secret = await webhook_channel(platform, telegram, model)
    await pair(platform, http, telegram, secret, "owner")
    await post(http, {"update_id": 2, "message": _message(2, "hi")}, secret)
    conversation_id = await bound_conversation(http)
    await settle(platform, conversation_id)
    assert telegram.sent[-1]["text"] == "Hello\\."
    return conversation_id


def _message(number: int, text: str) -> dict[str, object]:
    return {
        "message_id": number,
        "from": {"id": 42, "is_bot": False, "first_name": "Ana", "username": "u42"},
        "chat": {"id": 4200, "type": "private"},
        "date": 1_700_000_000,
        "text": text,
    }


async def test_rows_stored_by_a_process_that_does_not_know_the_chat_are_sent_by_the_sweep(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
    data_dir: Path,
) -> None:
    async with another_process(data_dir, telegram) as other:  # opened before the binding
        conversation_id = await bound_chat(
            ch_platform, http, telegram, write_script({"text": "Hello."})
        )
        assert conversation_id not in channels(other).relay.bound
        await other.runtime.append(
            conversation_id, [NewRow(kind="model_turn", data={"text": "From elsewhere."})]
        )
        await channels(other).relay.drained()
        assert said(telegram, "From elsewhere\\.") == 0  # the other process sent nothing

        await channels(ch_platform).relay.sweep()
        await settle(ch_platform)
        assert said(telegram, "From elsewhere\\.") == 1
        await channels(ch_platform).relay.sweep()  # nothing is behind any more
        await settle(ch_platform)
    assert said(telegram, "From elsewhere\\.") == 1
    assert said(telegram, "Hello\\.") == 1


async def test_two_processes_relaying_the_same_rows_send_them_once(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
    data_dir: Path,
) -> None:
    conversation_id = await bound_chat(
        ch_platform, http, telegram, write_script({"text": "Hello."})
    )
    async with another_process(data_dir, telegram) as other:  # knows the binding at start
        assert conversation_id in channels(other).relay.bound
        for n in range(5):
            await other.runtime.append(
                conversation_id, [NewRow(kind="model_turn", data={"text": f"Line {n}."})]
            )
            # The other process caught up at once; the serving one sweeps at the same time.
            await asyncio.gather(
                channels(ch_platform).relay.sweep(), channels(other).relay.drained()
            )
            await settle(ch_platform)
    texts = [m["text"] for m in telegram.sent if m["text"].startswith("Line")]
    assert texts == [f"Line {n}\\." for n in range(5)]


async def test_a_chat_is_taken_by_one_process_at_a_time_until_released_or_lapsed(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    conversation_id = await bound_chat(
        ch_platform, http, telegram, write_script({"text": "Hello."})
    )
    sessions = ch_platform.runtime.kernel.sessions
    processes = [RelayCursors(sessions) for _ in range(4)]
    at = await processes[0].position(conversation_id)
    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    assert at is not None and at == rows[-1].seq
    claims = await asyncio.gather(*(p.take(conversation_id) for p in processes))
    assert sum(c is not None for c in claims) == 1
    holder = processes[[c is not None for c in claims].index(True)]
    other = next(p for p in processes if p is not holder)
    assert not await other.done(conversation_id, at + 3)  # only the holder moves the cursor
    assert await holder.done(conversation_id, at + 3)
    assert await other.take(conversation_id) is None
    await holder.release(conversation_id)
    taken = await other.take(conversation_id)
    assert taken is not None and taken.relayed_seq == at + 3

    lapsing = RelayCursors(sessions, lease_s=0)  # a process that died holding the chat
    await other.release(conversation_id)
    assert await lapsing.take(conversation_id) is not None
    assert await lapsing.sending(conversation_id, at + 4, 0)
    successor = await processes[0].take(conversation_id)
    assert successor is not None and successor.in_flight and successor.sending_seq == at + 4
    assert await processes[0].position("c_nobody") is None


async def test_the_serving_process_sweeps_on_its_own(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
    data_dir: Path,
) -> None:
    await ch_platform.admin.set_live("channels_relay_sweep_ms", 50)
    await ch_platform.runtime.host()
    async with another_process(data_dir, telegram) as other:
        conversation_id = await bound_chat(
            ch_platform, http, telegram, write_script({"text": "Hello."})
        )
        await other.runtime.append(
            conversation_id, [NewRow(kind="model_turn", data={"text": "Swept."})]
        )
        assert await asyncio.to_thread(telegram.wait_for, lambda: said(telegram, "Swept\\.") == 1)
