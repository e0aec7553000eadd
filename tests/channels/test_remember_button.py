"""Approve and remember from a chat: a parked command offers a button that approves it and
keeps its command families as rules for the run's agent, through the same rules the web
card and the HTTP API remember."""

from __future__ import annotations

import httpx

from corral.platform import Platform
from tests.channels.conftest import connect, settle, tg_message, tg_press
from tests.channels.test_bound import bound_conversation
from tests.channels.test_slack import SIGNING, message_event, press, send
from tests.channels.test_telegram import pair, post, webhook_channel
from tests.channels.vendor_servers import FakeSlack, FakeTelegram
from tests.runtime.conftest import ScriptWriter, call
from tests.shell.conftest import needs_bwrap

COMMAND = "echo remembered | head -1"


def command_script(write_script: ScriptWriter) -> str:
    return write_script(
        {"tool_calls": [call("execute", command=COMMAND, reason="show it")]},
        {"when_result_contains": "remembered", "text": "Shown."},
    )


async def remembered_families(platform: Platform) -> dict[str, str]:
    """Each remembered rule's pattern and its scope."""
    kept = await platform.kernel.command_rules.remembered.listing()
    return {" ".join(r.to_json()["pattern"]): r.origin.scope for r in kept}


@needs_bwrap
async def test_a_telegram_button_approves_a_command_and_remembers_its_families(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    telegram: FakeTelegram,
    write_script: ScriptWriter,
) -> None:
    secret = await webhook_channel(ch_platform, telegram, command_script(write_script))
    await pair(ch_platform, http, telegram, secret, "owner")
    await post(http, tg_message(2, "show it"), secret)
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    (run,) = await ch_platform.runtime.runs.list_runs(conversation_id=conversation_id)
    assert run.status == "parked"
    asking = telegram.sent[-1]
    assert "for this agent: echo, head" in asking["text"]
    buttons = [row[0] for row in asking["reply_markup"]["inline_keyboard"]]
    assert [b["text"] for b in buttons] == ["Approve", "Approve and remember", "Deny"]
    assert await remembered_families(ch_platform) == {}

    await post(http, tg_press(3, buttons[1]["callback_data"]), secret)
    await settle(ch_platform, conversation_id)
    assert (await ch_platform.runtime.runs.get(run.id)).status == "finished"
    assert telegram.sent[-1]["text"] == "Shown\\."
    assert await remembered_families(ch_platform) == {"echo": "agent", "head": "agent"}
    # The remembered families now allow the command without asking.
    owner = await ch_platform.caller("owner")
    checked = await ch_platform.rules.check(COMMAND, caller=owner, agent=run.agent)
    assert checked.rules is not None and checked.rules.uncovered == ()


@needs_bwrap
async def test_a_slack_button_approves_a_command_and_remembers_its_families(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack, write_script: ScriptWriter
) -> None:
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": SIGNING, "model": command_script(write_script)},
    )
    await send(http, message_event("Ev1", "hi", ts="100.1"))
    await settle(ch_platform)
    code = slack.posted[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    await settle(ch_platform)
    await send(http, message_event("Ev2", "show it", ts="100.2"))
    conversation_id = await bound_conversation(http)
    await settle(ch_platform, conversation_id)
    buttons = slack.posted[-1]["blocks"][1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Approve", "Approve and remember", "Deny"]

    await press(http, buttons[1]["value"])
    await settle(ch_platform, conversation_id)
    assert slack.posted[-1]["text"] == "Shown."
    assert await remembered_families(ch_platform) == {"echo": "agent", "head": "agent"}
