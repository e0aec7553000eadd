"""The generic webhook: HMAC-signed JSON in, signed JSON POSTs out, for custom integrations.

Inbound: ``POST /channels/<name>/inbound`` with ``X-Corral-Signature: sha256=<hex>``, the
HMAC-SHA256 of the raw body under the connection's signing secret, and a JSON body
``{"event_id", "chat_id", "sender_id", "sender_name"?, "text"? | "choice"?}``. Outbound: a
POST of ``{"chat_id", "thread", "text", "choices": [{"label", "value"}]}`` to the
configured URL, signed the same way.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from corral import strict_json
from corral.channels.vendors.base import (
    BadSignature,
    FieldSpec,
    Inbound,
    Outbound,
    Parsed,
    Poster,
    SendFailed,
    encode_json,
)

__all__ = ["SIGNATURE_HEADER", "GenericWebhook", "sign_body"]

SIGNATURE_HEADER = "x-corral-signature"


def sign_body(secret: str, body: bytes) -> str:
    """The signature header value for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class GenericWebhook:
    """The generic webhook vendor."""

    provider: str = "webhook"
    has_buttons: bool = False
    idempotent: bool = True
    max_chars: int = 16_000
    fields: tuple[FieldSpec, ...] = (
        FieldSpec(
            name="signing_secret",
            secret=True,
            required=True,
            description="HMAC-SHA256 key for both directions",
        ),
        FieldSpec(
            name="outbound_url",
            secret=False,
            required=True,
            description="where answers are POSTed (https)",
        ),
    )

    def parse(
        self, headers: Mapping[str, str], body: bytes, secrets: Mapping[str, str], now: float
    ) -> Parsed:
        secret = secrets.get("signing_secret", "")
        given = headers.get(SIGNATURE_HEADER, "")
        if not secret or not hmac.compare_digest(given.encode(), sign_body(secret, body).encode()):
            raise BadSignature(f"the {SIGNATURE_HEADER!r} header does not match the body")
        event = strict_json.loads(body)  # refused: a 400
        if not isinstance(event, Mapping) or not event.get("event_id") or not event.get("chat_id"):
            return Parsed()
        choice = event.get("choice")
        return Parsed(
            events=[
                Inbound(
                    event_id=str(event["event_id"]),
                    chat_id=str(event["chat_id"]),
                    sender_id=str(event.get("sender_id", "")),
                    sender_name=str(event.get("sender_name", "")),
                    text=str(event.get("text", "")),
                    choice=str(choice) if choice is not None else None,
                    thread=str(event.get("thread", "")),
                )
            ]
        )

    def api_url(self, fields: Mapping[str, str], secrets: Mapping[str, str]) -> str:
        parts = urlsplit(fields["outbound_url"])
        return f"{parts.scheme}://{parts.netloc}"

    async def send(
        self,
        poster: Poster,
        fields: Mapping[str, str],
        secrets: Mapping[str, str],
        message: Outbound,
    ) -> str | None:
        payload: dict[str, Any] = {
            "chat_id": message.chat_id,
            "thread": message.thread,
            "text": message.text,
            "choices": [{"label": c.label, "value": c.value} for c in message.choices],
        }
        body = encode_json(payload)
        status, _ = await poster.post(
            fields["outbound_url"],
            payload,
            headers={
                "X-Corral-Signature": sign_body(secrets["signing_secret"], body),
                **({"Idempotency-Key": message.key} if message.key else {}),
            },
        )
        if not 200 <= status < 300:
            raise SendFailed(
                f"the webhook at {fields['outbound_url']!r} answered {status}",
                retry=status == 429 or status >= 500,
            )
        return None  # the receiver's messages are its own: nothing to edit later
