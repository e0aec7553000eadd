"""Channel vendors, one module each: Telegram, Slack and the generic webhook."""

from __future__ import annotations

from corral.channels.vendors.base import (
    BadSignature,
    Choice,
    EditsMessages,
    FieldSpec,
    Inbound,
    Outbound,
    Parsed,
    Poster,
    SendFailed,
    Vendor,
    encode_json,
)
from corral.channels.vendors.slack import Slack
from corral.channels.vendors.telegram import Telegram
from corral.channels.vendors.webhook import GenericWebhook

__all__ = [
    "BadSignature",
    "Choice",
    "EditsMessages",
    "FieldSpec",
    "GenericWebhook",
    "Inbound",
    "Outbound",
    "Parsed",
    "Poster",
    "SendFailed",
    "Slack",
    "Telegram",
    "Vendor",
    "encode_json",
]
