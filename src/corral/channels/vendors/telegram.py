"""Telegram Bot API: webhook updates (secret-token header), getUpdates, sendMessage.

Inbound updates arrive by webhook, checked against the ``X-Telegram-Bot-Api-Secret-Token``
header registered with ``setWebhook``, or by long polling ``getUpdates`` for installations
without a public URL. Outbound text is sent with ``parse_mode=MarkdownV2`` and every special
character escaped, so it shows literally; choices become an inline keyboard whose presses
come back as ``callback_query`` updates.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

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

__all__ = ["SECRET_HEADER", "Telegram", "read_update"]

SECRET_HEADER = "x-telegram-bot-api-secret-token"


def _name(user: Mapping[str, Any]) -> str:
    if user.get("username"):
        return "@" + str(user["username"])
    return " ".join(str(user[k]) for k in ("first_name", "last_name") if user.get(k)) or "someone"


def read_update(update: Mapping[str, Any]) -> Inbound | None:
    """One update as an inbound event; None for kinds channels do not use."""
    event_id = f"update:{update.get('update_id')}"
    message = update.get("message")
    if isinstance(message, Mapping) and isinstance(message.get("from"), Mapping):
        text = message.get("text")
        if not isinstance(text, str):
            return None
        sender = message["from"]
        return Inbound(
            event_id=event_id,
            chat_id=str((message.get("chat") or {}).get("id", "")),
            sender_id=str(sender.get("id", "")),
            sender_name=_name(sender),
            text=text,
        )
    query = update.get("callback_query")
    if isinstance(query, Mapping) and isinstance(query.get("from"), Mapping):
        chat = ((query.get("message") or {}).get("chat")) or {}
        return Inbound(
            event_id=event_id,
            chat_id=str(chat.get("id", "")),
            sender_id=str(query["from"].get("id", "")),
            sender_name=_name(query["from"]),
            choice=str(query.get("data", "")),
            ack_id=str(query.get("id", "")),
        )
    return None


class Telegram:
    """The Telegram Bot API vendor; ``base_url`` is the API root (a setting)."""

    provider: str = "telegram"
    has_buttons: bool = True
    idempotent: bool = False
    max_chars: int = 4096
    fields: tuple[FieldSpec, ...] = (
        FieldSpec(name="bot_token", secret=True, required=True, description="from @BotFather"),
        FieldSpec(
            name="webhook_secret",
            secret=True,
            required=False,
            description="checked on every webhook call (generated when left out)",
        ),
        FieldSpec(
            name="mode",
            secret=False,
            required=False,
            description="'polling' (default: getUpdates, no public URL needed) or 'webhook'",
        ),
        FieldSpec(
            name="public_url",
            secret=False,
            required=False,
            description="for webhook mode: this server's public https base URL",
        ),
        FieldSpec(
            name="poll_timeout",
            secret=False,
            required=False,
            description="for polling: seconds one getUpdates call waits (default 25)",
        ),
    )

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def parse(
        self, headers: Mapping[str, str], body: bytes, secrets: Mapping[str, str], now: float
    ) -> Parsed:
        expected = secrets.get("webhook_secret", "")
        given = headers.get(SECRET_HEADER, "")
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            raise BadSignature(f"the {SECRET_HEADER!r} header does not match this connection")
        update = strict_json.loads(body)  # refused: a 400
        found = read_update(update) if isinstance(update, Mapping) else None
        return Parsed(events=[found] if found else [])

    def api_url(self, fields: Mapping[str, str], secrets: Mapping[str, str]) -> str:
        return f"{self.base_url}/bot{secrets['bot_token']}"

    async def call(
        self, poster: Poster, secrets: Mapping[str, str], method: str, payload: dict[str, Any]
    ) -> Any:
        """Call one Bot API method; its ``result``, or :class:`SendFailed`."""
        status, answer = await poster.post(f"{self.api_url({}, secrets)}/{method}", payload)
        if isinstance(answer, Mapping) and answer.get("ok") is True:
            return answer.get("result")
        description = answer.get("description") if isinstance(answer, Mapping) else None
        params = (answer.get("parameters") or {}) if isinstance(answer, Mapping) else {}
        after = params.get("retry_after")
        raise SendFailed(
            f"Telegram {method} answered {status}: {description or 'no description'}",
            retry=status == 429 or status >= 500,
            after=float(after) if isinstance(after, int | float) else None,
        )

    async def verify(self, poster: Poster, secrets: Mapping[str, str]) -> None:
        """Ask ``getMe``: a refused bot token is :class:`SendFailed` saying so."""
        try:
            await self.call(poster, secrets, "getMe", {})
        except SendFailed as exc:
            if exc.retry:
                raise
            raise SendFailed(
                f"Telegram refused the bot token ({exc}); copy the token @BotFather gave "
                "for this bot",
                retry=False,
            ) from None

    async def send(
        self,
        poster: Poster,
        fields: Mapping[str, str],
        secrets: Mapping[str, str],
        message: Outbound,
    ) -> str | None:
        payload: dict[str, Any] = {
            "chat_id": message.chat_id,
            "text": message.text,
            "parse_mode": "MarkdownV2",
        }
        if message.choices:
            payload["reply_markup"] = {
                "inline_keyboard": [
                    [{"text": c.label, "callback_data": c.value}] for c in message.choices
                ]
            }
        sent = await self.call(poster, secrets, "sendMessage", payload)
        found = sent.get("message_id") if isinstance(sent, Mapping) else None
        return str(found) if found is not None else None

    async def edit(
        self,
        poster: Poster,
        secrets: Mapping[str, str],
        chat_id: str,
        message_ref: str,
        text: str,
    ) -> None:
        """``editMessageText`` without a ``reply_markup``: the inline keyboard goes."""
        payload: dict[str, Any] = {
            "chat_id": chat_id,
            "message_id": int(message_ref) if message_ref.isdigit() else message_ref,
            "text": text,
            "parse_mode": "MarkdownV2",
        }
        await self.call(poster, secrets, "editMessageText", payload)
