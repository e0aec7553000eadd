"""The generic webhook: HMAC-signed inbound, signed outbound POSTs to the configured URL."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import httpx

from corral.platform import Platform
from tests.channels.conftest import as_json, connect, settle
from tests.channels.vendor_servers import FakeWebhook
from tests.runtime.conftest import ScriptWriter, call


def signed(secret: str, event: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    body = as_json(event)
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-Corral-Signature": f"sha256={digest}"}


async def paired_message(
    platform: Platform, http: httpx.AsyncClient, receiver: FakeWebhook, text: str
) -> str:
    """Sender s1 of chat "room" pairs through the webhook "hook" and then says ``text``; the
    conversation it went to, once its run has settled."""
    event = {"event_id": "e1", "chat_id": "room", "sender_id": "s1", "text": "hi"}
    body, headers = signed(receiver.secret, event)
    await http.post("/channels/hook/inbound", content=body, headers=headers)
    await settle(platform)
    code = receiver.received[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    body, headers = signed(receiver.secret, {**event, "event_id": "e2", "text": text})
    await http.post("/channels/hook/inbound", content=body, headers=headers)
    pairing = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    conversation_id: str = pairing["pairings"][0]["conversation_id"]
    await settle(platform, conversation_id)
    return conversation_id


async def test_webhook_pairs_and_answers_with_signed_posts(
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
        fields={"outbound_url": f"{receiver.url}/in", "model": write_script({"text": "Got it."})},
    )
    event = {"event_id": "e1", "chat_id": "room", "sender_id": "s1", "text": "hi"}
    body, headers = signed("wrong", event)
    assert (
        await http.post("/channels/hook/inbound", content=body, headers=headers)
    ).status_code == 401
    body, headers = signed(receiver.secret, event)
    assert (
        await http.post("/channels/hook/inbound", content=body, headers=headers)
    ).status_code == 200
    await settle(ch_platform)
    code = receiver.received[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    body, headers = signed(receiver.secret, {**event, "event_id": "e2", "text": "hello"})
    await http.post("/channels/hook/inbound", content=body, headers=headers)
    pairing = (await http.get("/channels/pairing", params={"status": "approved"})).json()
    await settle(ch_platform, pairing["pairings"][0]["conversation_id"])
    assert receiver.received[-1] == {
        "chat_id": "room",
        "thread": "",
        "text": "Got it.",
        "choices": [],
    }
    assert receiver.bad_signatures == 0  # every outbound POST carried a valid signature


async def test_without_buttons_approvals_and_questions_take_numbered_replies(
    ch_platform: Platform,
    http: httpx.AsyncClient,
    receiver: FakeWebhook,
    write_script: ScriptWriter,
) -> None:
    model = write_script(
        {"tool_calls": [call("write_note", path="data://hook.md", text="x")]},
        {"when_result_contains": "denied", "text": "Not written."},
        {
            "tool_calls": [
                call(
                    "ask_question", questions=[{"question": "Colour?", "options": ["red", "blue"]}]
                )
            ]
        },
        {"when_result_contains": "blue", "text": "Blue."},
    )
    await connect(
        ch_platform,
        name="hook",
        provider="webhook",
        secret=receiver.secret,
        fields={"outbound_url": f"{receiver.url}/in", "model": model},
    )

    async def say(event_id: str, text: str) -> None:
        event = {"event_id": event_id, "chat_id": "room", "sender_id": "s1", "text": text}
        body, headers = signed(receiver.secret, event)
        await http.post("/channels/hook/inbound", content=body, headers=headers)
        paired = await http.get("/channels/pairing", params={"status": "approved"})
        bound = [p["conversation_id"] for p in paired.json()["pairings"]]
        await settle(ch_platform, bound[0] if bound else None)

    await say("e1", "hi")
    code = receiver.received[-1]["text"].split("pairing code is ")[1].split(" ")[0]
    await http.post(f"/channels/pairing/{code}/approve", json={})
    await say("e2", "write it")
    asking = receiver.received[-1]
    assert asking["choices"] == [] and "Reply 1 to approve or 2 to deny" in asking["text"]
    await say("e3", "maybe")
    assert receiver.received[-1]["text"] == "Reply 1 to approve or 2 to deny."
    await say("e4", "2")
    assert receiver.received[-1]["text"] == "Not written."
    await say("e5", "ask me")
    assert "2) blue" in receiver.received[-1]["text"] and receiver.received[-1]["choices"] == []
    await say("e6", "2")  # the option's number
    assert receiver.received[-1]["text"] == "Blue."


async def test_the_channels_panel_connects_over_http_without_echoing_secrets(
    ch_platform: Platform, http: httpx.AsyncClient, receiver: FakeWebhook
) -> None:
    body = {
        "name": "panel",
        "provider": "webhook",
        "fields": {"signing_secret": "panel-secret-1", "outbound_url": f"{receiver.url}/in"},
    }
    created = await http.post("/channels", json=body)
    assert created.status_code == 201 and "panel-secret-1" not in created.text
    assert {f["name"]: f["hasValue"] for f in created.json()["fields"]}["signing_secret"]
    again = await http.post("/channels", json=body)
    assert again.status_code == 422 and "already connected" in again.json()["detail"]
    bad = await http.post("/channels", json={**body, "name": "Bad Name"})
    assert bad.status_code == 422
    listed = await http.get("/channels")
    assert [r["name"] for r in listed.json()["rows"]] == ["panel"]
    assert "panel-secret-1" not in listed.text


async def test_a_prompt_hook_refuses_a_channel_message_with_its_reason(
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
        fields={"outbound_url": f"{receiver.url}/in", "model": write_script({"text": "Got it."})},
    )
    guard = "grep -q password && echo 'no secrets in chat' >&2 && exit 2; echo 'team: ops'"
    await ch_platform.admin.set_live(
        "hooks", {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": guard}]}]}
    )
    conversation_id = await paired_message(ch_platform, http, receiver, "my password")
    refused = "Your message was not sent: blocked by hook grep: no secrets in chat"
    assert receiver.received[-1]["text"] == refused
    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    assert [r for r in rows if r.kind == "user_message"] == []  # nothing stored
    later = {"event_id": "e3", "chat_id": "room", "sender_id": "s1", "text": "hello"}
    body, headers = signed(receiver.secret, later)
    await http.post("/channels/hook/inbound", content=body, headers=headers)
    await settle(ch_platform, conversation_id)
    assert receiver.received[-1]["text"] == "Got it."
    rows = await ch_platform.runtime.conversations.rows(conversation_id)
    (message,) = [r for r in rows if r.kind == "user_message"]
    assert message.data["text"] == "hello" and message.data["hook_context"] == ["team: ops"]
