"""A vendor outage: a message is retried past its quick attempts, for a bounded time
(``channels_outage_retry_s``), then recorded as undelivered where the owner sees it — a
card in the conversation and the channel's count — and later rows still go out."""

from __future__ import annotations

import httpx

from corral.platform import Platform
from corral.runtime.timeline import NewRow
from tests.channels.conftest import channels, settle
from tests.channels.test_relay_elsewhere import bound_chat, said
from tests.channels.vendor_servers import FakeTelegram
from tests.runtime.conftest import ScriptWriter


async def test_a_message_is_retried_through_an_outage_then_recorded_as_undelivered(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    conversation_id = await bound_chat(
        ch_platform, http, telegram, write_script({"text": "Hello."})
    )
    await ch_platform.admin.set_live("channels_send_attempts", 2)
    await ch_platform.admin.set_live("channels_outage_retry_s", 600)
    with telegram.changed:
        telegram.failures.extend([502] * 6)
    await ch_platform.runtime.append(
        conversation_id, [NewRow(kind="model_turn", data={"text": "Later."})]
    )
    sent_before = (await channels(ch_platform).check("tg"))["sent"]
    await settle(ch_platform)
    assert said(telegram, "Later\\.") == 7  # six refused, the seventh past the two quick ones
    state = await channels(ch_platform).check("tg")
    assert state["retries"] == 6 and state["undelivered"] == 0
    assert state["sent"] == sent_before + 1

    await ch_platform.admin.set_live("channels_outage_retry_s", 1)
    with telegram.changed:
        telegram.failures.extend([502] * 100_000)  # down for good
    await ch_platform.runtime.append(
        conversation_id, [NewRow(kind="model_turn", data={"text": "Lost."})]
    )
    await settle(ch_platform)
    with telegram.changed:
        telegram.failures.clear()
    assert said(telegram, "Lost\\.") > 2  # tried past the quick attempts, never accepted
    state = await channels(ch_platform).check("tg")
    assert state["undelivered"] == 1 and "502" in state["lastError"]
    assert state["sent"] == sent_before + 1
    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    cards = [r.data for r in rows if r.kind == "card" and r.data.get("card") == "undelivered"]
    assert len(cards) == 1 and cards[0]["channel"] == "tg" and "502" in cards[0]["reason"]
    listed = (await http.get("/channels/tg")).json()
    assert listed["undelivered"] == 1

    await ch_platform.runtime.append(
        conversation_id, [NewRow(kind="model_turn", data={"text": "Back."})]
    )
    await settle(ch_platform)
    assert said(telegram, "Back\\.") == 1  # the chat goes on after the lost message
