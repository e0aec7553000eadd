"""Slack: signed Events API requests, the URL challenge, threads, Block Kit buttons."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx

from corral.platform import Platform
from tests.channels.conftest import as_json, connect, settle, slack_signed
from tests.channels.vendor_servers import FakeSlack
from tests.runtime.conftest import ScriptWriter, call

SIGNING = "slack-signing-secret"


def message_event(event_id: str, text: str, *, ts: str, user: str = "U1") -> dict[str, Any]:
    return {
        "type": "event_callback",
        "event_id": event_id,
        "event": {"type": "message", "user": user, "channel": "C9", "text": text, "ts": ts},
    }


async def send(http: httpx.AsyncClient, envelope: dict[str, Any], **sign: Any) -> httpx.Response:
    body = as_json(envelope)
    return await http.post(
        "/channels/sl/inbound", content=body, headers=slack_signed(SIGNING, body, **sign)
    )


async def press(http: httpx.AsyncClient, value: str, *, user: str = "U1") -> httpx.Response:
    payload = {
        "type": "block_actions",
        "trigger_id": "t1",
        "user": {"id": user, "username": "ana"},
        "channel": {"id": "C9"},
        "container": {"thread_ts": "100.1"},
        "message": {"ts": "100.5", "thread_ts": "100.1"},
        "actions": [{"action_id": "choice-0", "value": value, "action_ts": f"{time.time()}"}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    headers = slack_signed(SIGNING, body)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    return await http.post("/channels/sl/inbound", content=body, headers=headers)


async def test_slack_pairs_answers_in_the_thread_and_takes_a_button_press(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack, write_script: ScriptWriter
) -> None:
    model = write_script(
        {"text": "Hello from Corral."},
        {
            "tool_calls": [
                call("ask_question", questions=[{"question": "Ship it?", "options": ["yes", "no"]}])
            ]
        },
        {"when_result_contains": "yes", "text": "Shipping."},
    )
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": SIGNING, "model": model},
    )
    challenge = await send(http, {"type": "url_verification", "challenge": "c-123"})
    assert challenge.json() == {"challenge": "c-123"}

    await send(http, message_event("Ev1", "hi", ts="100.1"))
    await settle(ch_platform)
    code_message = slack.posted[-1]
    assert code_message["channel"] == "C9" and code_message["thread_ts"] == "100.1"
    code = code_message["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    await settle(ch_platform)

    await send(http, message_event("Ev2", "hello", ts="100.2"))
    await send(http, message_event("Ev2", "hello", ts="100.2"))  # Slack's retry
    pairing = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    conversation_id = pairing["pairings"][0]["conversation_id"]
    await settle(ch_platform, conversation_id)
    assert [p["text"] for p in slack.posted].count("Hello from Corral.") == 1
    assert slack.posted[-1]["thread_ts"] == "100.2"

    await send(http, message_event("Ev3", "deploy", ts="100.3"))
    await settle(ch_platform, conversation_id)
    asking = slack.posted[-1]
    buttons = asking["blocks"][1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["yes", "no"]
    await press(http, buttons[0]["value"])
    await settle(ch_platform, conversation_id)
    assert slack.posted[-1]["text"] == "Shipping."


async def test_slack_refuses_bad_signatures_and_stale_timestamps(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack, write_script: ScriptWriter
) -> None:
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": SIGNING},
    )
    body = as_json(message_event("Ev1", "hi", ts="1.1"))
    forged = slack_signed("another-secret", body)
    assert (
        await http.post("/channels/sl/inbound", content=body, headers=forged)
    ).status_code == 401
    stale = await send(http, message_event("Ev1", "hi", ts="1.1"), at=time.time() - 301)
    assert stale.status_code == 401 and "5-minute" in stale.json()["detail"]
    tampered = slack_signed(SIGNING, body)
    assert (
        await http.post("/channels/sl/inbound", content=body + b" ", headers=tampered)
    ).status_code == 401
    await settle(ch_platform)
    assert slack.posted == []
    # The event id was not burnt by the refused attempts: the genuine delivery still counts.
    assert (await send(http, message_event("Ev1", "hi", ts="1.1"))).status_code == 200
    await settle(ch_platform)
    assert "pairing code" in slack.posted[-1]["text"]


async def test_a_message_delivered_as_message_and_app_mention_is_taken_once(
    ch_platform: Platform, http: httpx.AsyncClient, slack: FakeSlack, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Hello from Corral."})
    await connect(
        ch_platform,
        name="sl",
        provider="slack",
        secret=slack.token,
        fields={"signing_secret": SIGNING, "model": model},
    )
    await send(http, message_event("Ev1", "hi", ts="200.1"))
    await settle(ch_platform)
    code = slack.posted[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    await settle(ch_platform)

    mention = message_event("Ev3", "<@UBOT> hello", ts="200.2")
    mention["event"]["type"] = "app_mention"
    await send(http, message_event("Ev2", "<@UBOT> hello", ts="200.2"))
    await send(http, mention)  # the same message, as Slack sends it to a mentioned app
    pairing = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    await settle(ch_platform, pairing["pairings"][0]["conversation_id"])
    texts = [p["text"] for p in slack.posted]
    assert texts.count("Hello from Corral.") == 1
    assert not [t for t in texts if t.startswith("Still working")]
