"""Agents messaging each other: inbox messages queued into a conversation one may write.

The receiving agent reads the message inside an untrusted-content envelope naming the
sender, and the conversation continues by itself as the *sender's* user (never as the
conversation's owner), with their rights re-resolved at that moment. Three live settings
keep exchanges bounded:

- ``inbox_hop_ceiling``: a message sent from a run that a message started is one hop
  further; past the ceiling it is refused;
- ``inbox_max_undelivered``: undelivered messages a conversation may hold;
- ``inbox_min_interval_ms``: minimum gap between two messages to the same conversation.

The sender is always the caller's own session: the user is the caller, and a sending
conversation or run must be one the caller may write.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from corral.errors import Refusal, UsageError
from corral.policy.identity import Caller
from corral.runtime.deliveries import DeliveryRecord
from corral.runtime.turns import wake
from corral.store.tables import as_utc

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["send_message"]


async def send_message(
    rt: RunHost,
    conversation_id: str,
    text: str,
    *,
    sender: Caller,
    from_conversation_id: str | None = None,
    from_run_id: str | None = None,
) -> DeliveryRecord:
    """Queue ``text`` into ``conversation_id`` from ``sender``; refusals say which limit."""
    if not text.strip():
        raise UsageError("an inbox message needs some text")
    target = await rt.conversations.get(conversation_id)
    target.check_access(sender)
    hop, agent, origin = 1, None, from_conversation_id
    if from_run_id is not None:
        run = await rt.runs.get(from_run_id)
        (await rt.conversations.get(run.conversation_id)).check_access(sender)
        hop, agent, origin = run.hop + 1, run.agent, run.conversation_id
    elif from_conversation_id is not None:
        source = await rt.conversations.get(from_conversation_id)
        source.check_access(sender)
        agent = source.agent
        if source.active_run_id is not None:
            hop = (await rt.runs.get(source.active_run_id)).hop + 1
    live = await rt.kernel.live_settings()
    ceiling = int(live["inbox_hop_ceiling"])
    if hop > ceiling:
        raise Refusal(
            f"the message would be hop {hop} of an agent-to-agent exchange, past the ceiling "
            f"of {ceiling} (live setting inbox_hop_ceiling); answer your user instead",
            code="inbox_hop_ceiling",
            data={"hop": hop, "ceiling": ceiling},
        )
    cap = int(live["inbox_max_undelivered"])
    if await rt.deliveries.count_undelivered(conversation_id, "message") >= cap:
        raise Refusal(
            f"conversation {conversation_id!r} already holds {cap} undelivered messages "
            "(live setting inbox_max_undelivered); try again after it has read them",
            code="inbox_full",
            data={"cap": cap},
        )
    gap_ms = int(live["inbox_min_interval_ms"])
    last = await rt.deliveries.last_queued_at(conversation_id, "message")
    if last is not None and gap_ms > 0:
        waited = (datetime.now(UTC) - as_utc(last)).total_seconds() * 1000
        if waited < gap_ms:
            raise Refusal(
                f"a message reached conversation {conversation_id!r} {waited:.0f} ms ago; "
                f"messages to one conversation need {gap_ms} ms between them (live setting "
                "inbox_min_interval_ms); send again later",
                code="inbox_too_soon",
                data={"retry_after_ms": round(gap_ms - waited)},
            )
    delivery = await rt.deliveries.queue(
        conversation_id=conversation_id,
        kind="message",
        user_id=sender.user_id,
        source="agent",
        source_id=origin or sender.user_id,
        title=f"message from {agent or sender.name}",
        text=text,
        data={
            "sender": {
                "user_id": sender.user_id,
                "user_name": sender.name,
                "conversation_id": origin,
                "agent": agent,
                "run_id": from_run_id,
            }
        },
        hop=hop,
    )
    rt.events.publish(conversation_id, {"type": "queued", "delivery": delivery.to_json()})
    await wake(rt, conversation_id)
    return delivery
