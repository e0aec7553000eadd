"""Messaging channels: conversations reachable from Telegram, Slack and a generic webhook.

Vendors (:mod:`corral.channels.vendors`) speak each protocol; :class:`Channels` is the
service — inbound with signatures, idempotency, flood limit and sender pairing; bound
conversations whose answers, tool summaries, reports, approvals and questions go back to the
chat (:mod:`corral.channels.relay`); workflow delivery; and the ``channel`` kind of
``connect`` (:mod:`corral.channels.connect_kind`).
"""

from __future__ import annotations

from corral.channels.connect_kind import ChannelKind
from corral.channels.service import Channels, Received

__all__ = ["ChannelKind", "Channels", "Received"]
