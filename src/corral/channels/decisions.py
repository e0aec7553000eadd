"""Decisions in chats beyond the bound conversation's own rows.

- A chat message that offered an approval or a question with buttons is edited, once, when
  the decision ends anywhere ("approved by ana in the browser"): who and where come from
  the decision's record (:mod:`corral.kernel.decisions`, the compare-and-set's winner). The
  edit is started by that card's row in this process and, for decisions made elsewhere
  (another process, a run that ended), by the relay's periodic sweep.
- A person who chose so (``corral channels notify on``) is sent each new pending decision
  of theirs to every chat they are paired in, with the buttons to answer it, unless that
  chat is bound to the decision's conversation (it is sent there anyway).

Both act on rows this process stores; a cluster worker leaves them to the serving process
(its sweep edits; notifications are sent for waits stored by the serving process).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from typing import Any

from corral.channels.decision_messages import WaitMessage
from corral.channels.relay import Chat, Relay
from corral.channels.store import ChannelStore
from corral.channels.text import escape_markdown_v2
from corral.errors import NotFound, UsageError
from corral.kernel import Kernel
from corral.runtime.timeline import TimelineRow
from corral.store import runtime_tables as rt_tables

__all__ = ["DecisionSurfaces", "outcome_line", "surface_phrase"]

log = logging.getLogger("corral.channels")

_SURFACES = {
    "web": "in the browser",
    "browser": "in the browser",
    "ui": "in the browser",
    "cli": "in the terminal",
    "terminal": "in the terminal",
    "api": "through the API",
    "http": "through the API",
    "telegram": "in Telegram",
    "slack": "in Slack",
    "webhook": "in a chat",
    "channel": "in a chat",
    "mcp": "in an MCP client",
    "sweep": "by the platform",
    "expiry": "by the platform",
}
_VERBS = {
    "approve": "approved",
    "approved": "approved",
    "deny": "denied",
    "denied": "denied",
    "expired": "expired",
    "closed": "closed",
}


def surface_phrase(surface: object) -> str:
    """`` in the browser``, `` in Telegram``…; empty when no surface was recorded."""
    if not isinstance(surface, str) or not surface:
        return ""
    return " " + _SURFACES.get(surface.lower(), f"from {surface}")


def outcome_line(verb: str, by: str | None, surface: object = None) -> str:
    """``approved by ana in the browser`` (the surface only when the decision names one)."""
    said = _VERBS.get(verb, verb)
    return f"{said} by {by}{surface_phrase(surface)}" if by else said + surface_phrase(surface)


class DecisionSurfaces:
    """Edits the chat messages of decisions that ended; notifies people who asked to be."""

    def __init__(self, kernel: Kernel, store: ChannelStore, relay: Relay) -> None:
        self._kernel = kernel
        self._store = store
        self._relay = relay
        self._tasks: set[asyncio.Task[None]] = set()

    # -- following rows ---------------------------------------------------------------------

    def observe(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """A waiting card may notify its person; a decision's card edits its messages."""
        for row in rows:
            if row.kind != "card":
                continue
            card, wait = row.data.get("card"), row.data.get("wait") or {}
            if card in ("decided", "answered") and wait.get("id"):
                self._spawn(self.settle(str(wait["id"])))
            elif card == "waiting" and wait.get("kind") in ("approval", "question"):
                self._spawn(self.notify(conversation_id, row))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a chat decision message failed", exc_info=task.exception())

    async def drained(self) -> None:
        """Wait for the edits and notifications started so far (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*tuple(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in tuple(self._tasks):
            task.cancel()
        await asyncio.gather(*tuple(self._tasks), return_exceptions=True)

    # -- edits --------------------------------------------------------------------------------

    async def settle(self, wait_id: str | None = None) -> None:
        """Edit every message of an ended decision (``wait_id``'s, or any) that does not say
        so yet; each message is edited once, by whichever process takes it first."""
        messages = self._relay.decision_messages
        for message in await messages.unedited(wait_id):
            line = await self._outcome(message)
            if line is None or not await messages.take_edit(message.id):
                continue
            connection = await self._store.connection(message.connection)
            said = f"\n\n{line[0].upper()}{line[1:]}."
            if connection is not None and connection.provider == "telegram":
                said = escape_markdown_v2(said)
            await self._relay.edit(
                message.connection, message.chat_id, message.message_ref, message.text + said
            )

    async def _outcome(self, message: WaitMessage) -> str | None:
        """How the decision ended, as the edit says it; None while it is still open. Who
        and where come from the decision's record (the compare-and-set's winner)."""
        try:
            record = await self._kernel.approvals.decisions.get(message.wait_id)
        except NotFound:  # every approval and question has one (0021_decisions): gone since
            return "closed"
        if record.status == "pending":
            return None
        by = record.decided_by_name or await self._name(record.decided_by)
        if record.status == "decided":
            answer = record.answer or {}
            verb = str(answer.get("decision") or "answered")
            return outcome_line(verb, by, record.surface)
        if record.status == "expired":
            denied = ", so denied" if record.kind == "approval" else ""
            return f"expired without an answer{denied}"
        return "closed: the run ended before an answer"

    async def _name(self, user_id: str | None) -> str | None:
        if not user_id:
            return None
        try:
            return (await self._kernel.caller(user_id)).name
        except UsageError:  # removed since
            return user_id

    # -- notifications ------------------------------------------------------------------------

    async def notify(self, conversation_id: str, row: TimelineRow) -> None:
        """Send a new pending decision to the chats of its person, if they chose so."""
        user_id = row.user_id
        if user_id is None or not await self._relay.decision_messages.notify(user_id):
            return
        bound = self._relay.bound.get(conversation_id)
        senders = await self._store.senders(status="approved")
        title = await self._title(conversation_id)
        for sender in senders:
            if sender.user_id != user_id:
                continue
            chat = Chat(connection=sender.connection, chat_id=sender.chat_id, thread=sender.thread)
            if bound is not None and (bound.connection, bound.chat_id) == (
                chat.connection,
                chat.chat_id,
            ):
                continue  # the bound chat is sent the card with the conversation's rows
            offer = await self._relay.wait_message(chat, row.data.get("wait") or {}, row.data)
            if offer is None:
                continue
            offer = replace(offer, text=f"Waiting for you in “{title}”.\n{offer.text}")
            delivered = await self._relay.deliver(chat.connection, offer)
            if delivered.ok:
                await self._relay.note_offer(chat, conversation_id, row, delivered)
            else:
                log.warning(
                    "channel %r: a pending decision was not sent: %s",
                    chat.connection,
                    delivered.error,
                )

    async def _title(self, conversation_id: str) -> str:
        async with self._kernel.sessions() as session:
            found = await session.get(rt_tables.Conversation, conversation_id)
        return (found.title if found is not None else "") or conversation_id
