"""One approval answered at once from the HTTP API and a Telegram button: the first answer
wins, the other surface is told who decided, from where and when."""

from __future__ import annotations

import asyncio

import httpx

from corral.platform import Platform
from tests.channels.conftest import settle, tg_message, tg_press
from tests.channels.test_bound import bound_conversation
from tests.channels.test_telegram import pair, post, webhook_channel
from tests.channels.vendor_servers import FakeTelegram
from tests.runtime.conftest import ScriptWriter, call

WHERE = {"http": "the API", "telegram": "Telegram"}


async def test_http_and_a_telegram_button_at_once_give_one_winner(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    model = write_script(
        {"tool_calls": [call("write_note", path="data://both.md", text="x")]},
        [{"when_result_contains": "wrote", "text": "Written."}],
    )
    secret = await webhook_channel(ch_platform, telegram, model)
    await pair(ch_platform, http, telegram, secret, "owner")
    await post(http, tg_message(2, "write it"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    (run,) = await ch_platform.runtime.runs.list_runs(conversation_id=conversation_id)
    assert run.status == "parked"
    [approval] = await ch_platform.pending_approvals()
    buttons = [row[0] for row in telegram.sent[-1]["reply_markup"]["inline_keyboard"]]
    approve = next(b for b in buttons if b["text"] == "Approve")
    sent_before = len(telegram.sent)

    by_http, by_chat = await asyncio.gather(
        http.post(f"/approvals/{approval.id}/decision", json={"decision": "approve"}),
        post(http, tg_press(3, approve["callback_data"]), secret),
    )
    assert by_chat.status_code == 200
    await settle(ch_platform, conversation_id)
    decision = await ch_platform.decisions.get(approval.id)
    assert decision.status == "decided" and decision.surface in WHERE
    told = [m["text"] for m in telegram.sent[sent_before:]]
    late = f"already decided by owner from {WHERE[decision.surface or '']} at"
    if decision.surface == "http":
        assert by_http.status_code == 200
        assert any(late in " ".join(t.split()).replace("\\", "") for t in told), told
    else:
        assert by_http.status_code == 409 and by_http.json()["code"] == "already_decided"
        assert late in by_http.json()["detail"]
    assert (await ch_platform.runtime.runs.get(run.id)).status == "finished"
    assert (await ch_platform.approvals.get(approval.id)).result is not None
