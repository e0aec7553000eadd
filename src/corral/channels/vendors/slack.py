"""Slack: the Events API (signed, 5-minute window, URL verification) and chat.postMessage.

Every request is checked against the signing secret: ``v0=HMAC-SHA256(secret,
"v0:<timestamp>:<body>")`` in ``X-Slack-Signature``, with a timestamp at most five minutes
from now. ``url_verification`` is answered with its challenge; ``event_callback`` messages
become events (the bot's own messages are left out); Block Kit button presses arrive as
``block_actions`` interactivity payloads (form-encoded ``payload=``). Answers go back with
``chat.postMessage`` in the thread of the message that started the exchange.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from corral import strict_json
from corral.channels.vendors.base import (
    BadSignature,
    FieldSpec,
    Inbound,
    Outbound,
    Parsed,
    Poster,
    SendFailed,
)

__all__ = ["REPLAY_WINDOW_S", "Slack", "sign"]

REPLAY_WINDOW_S = 300


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` value for ``body`` sent at ``timestamp``."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def _verify(headers: Mapping[str, str], body: bytes, secret: str, now: float) -> None:
    stamp = headers.get("x-slack-request-timestamp", "")
    given = headers.get("x-slack-signature", "")
    if not secret or not given or not (stamp.isascii() and stamp.isdigit()):
        raise BadSignature("the request carries no Slack signature and timestamp")
    if abs(int(now) - int(stamp)) > REPLAY_WINDOW_S:  # integers: a 400-digit stamp is no float
        raise BadSignature("the Slack timestamp is outside the 5-minute window")
    if not hmac.compare_digest(given.encode(), sign(secret, stamp, body).encode()):
        raise BadSignature("the Slack signature does not match this connection")


def _interaction(raw: str) -> Parsed:
    if not raw:
        return Parsed()
    payload = strict_json.loads(raw)  # refused: a 400
    if not isinstance(payload, Mapping) or payload.get("type") != "block_actions":
        return Parsed()
    actions = payload.get("actions") or []
    if not actions:
        return Parsed()
    action = actions[0]
    container = payload.get("container") or {}
    message = payload.get("message") or {}
    user = payload.get("user") or {}
    return Parsed(
        events=[
            Inbound(
                event_id=f"action:{action.get('action_ts') or payload.get('trigger_id')}",
                chat_id=str((payload.get("channel") or {}).get("id", "")),
                sender_id=str(user.get("id", "")),
                sender_name=str(user.get("username") or user.get("name") or ""),
                choice=str(action.get("value", "")),
                thread=str(
                    container.get("thread_ts") or message.get("thread_ts") or message.get("ts", "")
                ),
            )
        ]
    )


class Slack:
    """The Slack vendor; ``base_url`` is the Web API root (a setting)."""

    provider: str = "slack"
    has_buttons: bool = True
    idempotent: bool = False
    max_chars: int = 3900
    fields: tuple[FieldSpec, ...] = (
        FieldSpec(name="bot_token", secret=True, required=True, description="xoxb-… bot token"),
        FieldSpec(
            name="signing_secret",
            secret=True,
            required=True,
            description="the app's signing secret (Basic Information)",
        ),
    )

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def parse(
        self, headers: Mapping[str, str], body: bytes, secrets: Mapping[str, str], now: float
    ) -> Parsed:
        _verify(headers, body, secrets.get("signing_secret", ""), now)
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = parse_qs(body.decode("utf-8", "replace"))
            return _interaction(form.get("payload", [""])[0])
        envelope = strict_json.loads(body)  # refused: a 400
        if not isinstance(envelope, Mapping):
            return Parsed()
        if envelope.get("type") == "url_verification":
            return Parsed(answer={"challenge": str(envelope.get("challenge", ""))})
        event = envelope.get("event") or {}
        if envelope.get("type") != "event_callback" or event.get("type") not in (
            "message",
            "app_mention",
        ):
            return Parsed()
        if event.get("bot_id") or event.get("subtype") or not event.get("user"):
            return Parsed()  # the bot's own posts and edits never start a turn
        return Parsed(
            events=[
                Inbound(
                    # One message comes as both `message` and `app_mention` (two event ids):
                    # its channel and ts name it once, retries included.
                    event_id=f"message:{event.get('channel')}:{event.get('ts')}"
                    if event.get("ts")
                    else f"event:{envelope.get('event_id')}",
                    chat_id=str(event.get("channel", "")),
                    sender_id=str(event["user"]),
                    sender_name=str(event["user"]),
                    text=str(event.get("text", "")),
                    thread=str(event.get("thread_ts") or event.get("ts") or ""),
                )
            ]
        )

    def api_url(self, fields: Mapping[str, str], secrets: Mapping[str, str]) -> str:
        return self.base_url

    async def verify(self, poster: Poster, secrets: Mapping[str, str]) -> None:
        """Ask ``auth.test``: a refused bot token is :class:`SendFailed` saying so."""
        status, answer = await poster.post(
            f"{self.base_url}/auth.test",
            {},
            headers={"Authorization": f"Bearer {secrets['bot_token']}"},
        )
        if isinstance(answer, Mapping) and answer.get("ok") is True:
            return
        error = answer.get("error") if isinstance(answer, Mapping) else None
        raise SendFailed(
            f"Slack refused the bot token (auth.test answered {status}: "
            f"{error or 'no error named'}); copy the xoxb- token from the app's OAuth page",
            retry=status == 429 or status >= 500,
        )

    async def send(
        self,
        poster: Poster,
        fields: Mapping[str, str],
        secrets: Mapping[str, str],
        message: Outbound,
    ) -> str | None:
        payload: dict[str, Any] = {"channel": message.chat_id, "text": message.text}
        if message.thread:
            payload["thread_ts"] = message.thread
        if message.choices:
            payload["blocks"] = [
                {"type": "section", "text": {"type": "mrkdwn", "text": message.text}},
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": c.label},
                            "value": c.value,
                            "action_id": f"choice-{i}",
                        }
                        for i, c in enumerate(message.choices)
                    ],
                },
            ]
        status, answer = await poster.post(
            f"{self.base_url}/chat.postMessage",
            payload,
            headers={"Authorization": f"Bearer {secrets['bot_token']}"},
        )
        if isinstance(answer, Mapping) and answer.get("ok") is True:
            ts = answer.get("ts")
            return str(ts) if ts else None
        raise _failed("chat.postMessage", status, answer)

    async def edit(
        self,
        poster: Poster,
        secrets: Mapping[str, str],
        chat_id: str,
        message_ref: str,
        text: str,
    ) -> None:
        """``chat.update`` with no blocks: the text replaced, the buttons gone."""
        status, answer = await poster.post(
            f"{self.base_url}/chat.update",
            {"channel": chat_id, "ts": message_ref, "text": text, "blocks": []},
            headers={"Authorization": f"Bearer {secrets['bot_token']}"},
        )
        if not (isinstance(answer, Mapping) and answer.get("ok") is True):
            raise _failed("chat.update", status, answer)


def _failed(method: str, status: int, answer: Any) -> SendFailed:
    error = answer.get("error") if isinstance(answer, Mapping) else None
    return SendFailed(
        f"Slack {method} answered {status}: {error or 'no error named'}",
        retry=status == 429 or status >= 500 or error == "ratelimited",
    )
