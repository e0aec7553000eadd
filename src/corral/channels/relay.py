"""Outbound: what a bound conversation says goes back to its chat, in order, with retries.

The runtime tells :meth:`Relay.poke` of every conversation it stores rows in; a bound
conversation's rows are caught up on by one queue that a single task drains, so a chat
reads them in the order they were written. Catching up takes the chat's claim and reads the
rows after its cursor (:mod:`corral.channels.relay_cursor`), so rows stored by another
process — a cluster worker — are sent by whichever process catches up first, and by no
other; the cursor moves past a row once the vendor accepted it. A piece that a relayer
which died had at the vendor is sent again where the vendor deduplicates (the generic
webhook's ``Idempotency-Key``) and otherwise counted undelivered: at most once, never
silently. A row given up on after ``channels_outage_retry_s`` leaves an ``undelivered``
card in the conversation and counts on the connection.

What is sent: the agent's text, a one-line summary per tool result, a line per background
report, approvals and questions as choices (buttons where the vendor has them, numbered
replies otherwise), and a failed or stopped run's reason. Cards for people, the
sender's own message and model-internal rows are not sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corral.channels.decision_messages import ChatDecisionMessages
from corral.channels.outbound import send_with_retry, vendor_poster
from corral.channels.relay_cursor import Claim, RelayCursors
from corral.channels.store import ChannelStore, ConnectionRecord
from corral.channels.text import escape_markdown_v2, split_text
from corral.channels.vendors import Choice, EditsMessages, Outbound, SendFailed, Vendor
from corral.kernel import Kernel
from corral.runtime.questions import Questions
from corral.runtime.timeline import TimelineRow

__all__ = [
    "REMEMBER_LABEL",
    "UNDELIVERED_CARD",
    "Chat",
    "Delivered",
    "Relay",
    "approval_choices",
    "proposed_families",
    "summarise",
]

log = logging.getLogger("corral.channels")

SecretsOf = Callable[[ConnectionRecord], Awaitable[dict[str, str]]]
RowsAfter = Callable[[str, int], Awaitable[Sequence[TimelineRow]]]
"""A conversation's rows after a row number, in order."""
CardOf = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Append a card to a conversation."""
UNDELIVERED_CARD = "undelivered"
_SUMMARY_CHARS = 160
REMEMBER_LABEL = "Approve and remember"
"""The button that approves and keeps the command's families as rules for this agent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Chat:
    """Where a message goes: a connection's chat (and thread)."""

    connection: str
    chat_id: str
    thread: str = ""


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"


def approval_choices(approval_id: str, *, remember: bool = False) -> tuple[Choice, ...]:
    """Approve and deny; with ``remember``, also approve and remember the command family
    for this agent."""
    kept = (Choice(REMEMBER_LABEL, f"a:{approval_id}:remember"),) if remember else ()
    return (
        Choice("Approve", f"a:{approval_id}:approve"),
        *kept,
        Choice("Deny", f"a:{approval_id}:deny"),
    )


def proposed_families(waiting_card: Mapping[str, Any]) -> list[str]:
    """The command families a waiting card proposes to remember (none for other calls)."""
    proposal = waiting_card.get("remember")
    families = proposal.get("family") if isinstance(proposal, Mapping) else None
    return [str(f) for f in families] if isinstance(families, list) else []


def summarise(row: TimelineRow) -> str | None:
    """The chat line for one row that needs no lookup; None when nothing is sent for it."""
    data = row.data
    if row.kind == "model_turn":
        return str(data.get("text") or "").strip() or None
    if row.kind == "tool_result":
        result = data.get("result") or {}
        status = result.get("status") or ("error" if result.get("is_error") else "ok")
        if status == "pending":
            return None  # its approval or question comes as its own message
        texts = [b.get("text", "") for b in result.get("content") or () if b.get("type") == "text"]
        first = _first_line("\n".join(texts))
        return f"[{data.get('tool', 'tool')}: {status}]" + (f" {first}" if first else "")
    if row.kind == "background_report":
        return f"[report: {data.get('title') or data.get('source', 'background work')}]"
    if row.kind == "card" and data.get("card") == "run_ended":
        if data.get("status") in ("finished", "parked"):
            return None
        reason = data.get("detail") or data.get("reason") or "no reason given"
        return f"The run {data.get('status')}: {reason}"
    return None


class Relay:
    """The outbound queue of every bound chat, and the messages for waits."""

    def __init__(
        self,
        kernel: Kernel,
        store: ChannelStore,
        vendors: Mapping[str, Vendor],
        secrets_of: SecretsOf,
        questions: Questions | None,
        rows_after: RowsAfter,
        *,
        add_card: CardOf | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._kernel = kernel
        self._store = store
        self._cursors = RelayCursors(kernel.sessions)
        self._rows_after = rows_after
        self._add_card = add_card
        self._vendors = vendors
        self._secrets_of = secrets_of
        self._questions = questions
        self._sleep = sleep
        self.bound: dict[str, Chat] = {}
        """Conversation id → its chat (kept in step with the senders' bindings)."""
        self._queue: asyncio.Queue[tuple[Chat, str | Outbound]] = asyncio.Queue()
        """Platform messages, and conversation ids whose rows to catch up on."""
        self._waiting: set[str] = set()
        """Conversations whose catch-up is queued and not begun (one is enough)."""
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self.decision_messages = ChatDecisionMessages(kernel.sessions)
        """The messages that offered decisions, edited when those end elsewhere."""

    # -- queueing ---------------------------------------------------------------------------

    def poke(self, conversation_id: str) -> None:
        """Catch up on the conversation's rows if a chat is bound to it."""
        chat = self.bound.get(conversation_id)
        if chat is None or conversation_id in self._waiting:
            return
        self._waiting.add(conversation_id)
        self._queue.put_nowait((chat, conversation_id))
        self._ensure_worker()

    async def sweep(self) -> None:
        """Catch up on every bound conversation with rows its chat was not sent (stored by
        another process, or while no process relayed); learns bindings made elsewhere."""
        for sender in await self._cursors.behind():
            assert sender.conversation_id is not None
            self.bound[sender.conversation_id] = Chat(
                connection=sender.connection, chat_id=sender.chat_id, thread=sender.thread
            )
            self.poke(sender.conversation_id)

    def say(self, chat: Chat, text: str, choices: tuple[Choice, ...] = ()) -> None:
        """Queue a platform message (pairing codes, notices) for ``chat``."""
        message = Outbound(chat_id=chat.chat_id, text=text, thread=chat.thread, choices=choices)
        self._queue.put_nowait((chat, message))
        self._ensure_worker()

    async def drained(self) -> None:
        """Wait until everything queued so far was sent or given up on."""
        await self._queue.join()

    def _ensure_worker(self) -> None:
        if self._closed:  # rows stored after close wait for the next relayer's sweep
            return
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain())

    async def close(self, *, grace_s: float = 5.0) -> None:
        """Send what is queued (for at most ``grace_s``), then stop and give back the chats
        this process holds: what it did not send stays after their cursors for the next
        relayer (this process's successor on its sweep, or another process now)."""
        if self._worker is not None and not self._worker.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), grace_s)
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        await self._cursors.release_all()

    async def _drain(self) -> None:
        while True:
            chat, item = await self._queue.get()
            try:
                if isinstance(item, Outbound):
                    sent = await self.deliver(chat.connection, item)
                    if not sent.ok:
                        log.warning(
                            "channel %r: a notice was not delivered: %s",
                            chat.connection,
                            sent.error,
                        )
                else:
                    self._waiting.discard(item)
                    await self._catch_up(chat, item)
            except Exception:
                log.exception("channel %r: an outbound message was dropped", chat.connection)
            finally:
                self._queue.task_done()

    async def _catch_up(self, chat: Chat, conversation_id: str) -> None:
        live = await self._kernel.live_settings()
        self._cursors.lease_s = float(live["channels_claim_lease_s"])
        claim = await self._cursors.take(conversation_id)
        if claim is None:
            if await self._cursors.position(conversation_id) is None:
                self.bound.pop(conversation_id, None)  # unbound by another process
            return  # or another process holds the chat and sends these rows
        try:
            await self._send_rows(chat, conversation_id, claim)
        finally:
            await self._cursors.release(conversation_id)

    async def _send_rows(self, chat: Chat, conversation_id: str, claim: Claim) -> None:
        rows = await self._rows_after(conversation_id, claim.relayed_seq)
        for row in rows:
            message = await self._message(chat, row)
            if message is None:
                continue
            first = 0
            if row.seq == claim.sending_seq:
                first = claim.sending_part
                if claim.in_flight and not await self._may_resend(chat, conversation_id, row):
                    first += 1
            if not await self._send_row(chat, conversation_id, row, message, first):
                return
        if rows:
            await self._cursors.done(conversation_id, rows[-1].seq)

    async def _may_resend(self, chat: Chat, conversation_id: str, row: TimelineRow) -> bool:
        """A piece of ``row`` was at the vendor when its relayer died: send it again where
        the vendor deduplicates; otherwise count it undelivered (it may have arrived)."""
        connection = await self._store.connection(chat.connection)
        if connection is None or self._vendors[connection.provider].idempotent:
            return True
        await self._undelivered(
            chat,
            conversation_id,
            row.seq,
            "the process sending it stopped during the call to the vendor, which cannot take "
            "a message exactly once; it may not have arrived",
        )
        return False

    async def _send_row(
        self, chat: Chat, conversation_id: str, row: TimelineRow, message: Outbound, first: int
    ) -> bool:
        """Send the row's pieces from ``first``; False when the claim was lost."""
        cursors = self._cursors
        lost = False

        async def before(part: int) -> None:
            nonlocal lost
            lost = lost or not await cursors.sending(conversation_id, row.seq, part)

        async def after(part: int, accepted: bool) -> None:
            if accepted:
                await cursors.sent_piece(conversation_id, row.seq, part)
            else:
                await cursors.not_sent(conversation_id)

        progress = _Progress(before=before, after=after, lost=lambda: lost)
        delivered = await self.deliver(
            chat.connection,
            message,
            first_part=first,
            key=f"{conversation_id}:{row.seq}",
            progress=progress,
        )
        if lost:
            return False
        if not delivered.ok:
            await self._undelivered(chat, conversation_id, row.seq, delivered.error)
        else:
            await self.note_offer(chat, conversation_id, row, delivered)
        return await cursors.done(conversation_id, row.seq)

    async def note_offer(
        self, chat: Chat, conversation_id: str, row: TimelineRow, delivered: Delivered
    ) -> None:
        """Keep the message that offered a waiting card's decision, to edit when it ends."""
        wait = row.data.get("wait") or {}
        if wait.get("kind") not in ("approval", "question") or not delivered.ref:
            return
        await self.decision_messages.note(
            wait_kind=str(wait["kind"]),
            wait_id=str(wait.get("id", "")),
            conversation_id=conversation_id,
            call_id=row.call_id or "",
            connection=chat.connection,
            chat_id=chat.chat_id,
            message_ref=delivered.ref,
            text=delivered.text,
        )

    async def _undelivered(self, chat: Chat, conversation_id: str, seq: int, reason: str) -> None:
        await self._store.count(chat.connection, "undelivered", error=reason)
        log.warning(
            "channel %r: row %d of %s was not delivered: %s",
            chat.connection,
            seq,
            conversation_id,
            reason,
        )
        if self._add_card is not None:
            await self._add_card(
                conversation_id,
                {
                    "card": UNDELIVERED_CARD,
                    "channel": chat.connection,
                    "chat_id": chat.chat_id,
                    "seq": seq,
                    "reason": reason,
                },
            )

    # -- formatting -------------------------------------------------------------------------

    async def _message(self, chat: Chat, row: TimelineRow) -> Outbound | None:
        if row.kind == "card" and row.data.get("card") == "waiting":
            return await self.wait_message(chat, row.data.get("wait") or {}, row.data)
        text = summarise(row)
        if text is None:
            return None
        return Outbound(chat_id=chat.chat_id, text=text, thread=chat.thread)

    async def wait_message(
        self, chat: Chat, wait: Mapping[str, Any], card: Mapping[str, Any]
    ) -> Outbound | None:
        """The message that offers a waiting card's approval or question to ``chat``."""
        connection = await self._store.connection(chat.connection)
        if connection is None:
            return None
        buttons = self._vendors[connection.provider].has_buttons
        kind, wait_id = wait.get("kind"), str(wait.get("id", ""))
        if kind == "approval":
            record = await self._kernel.approvals.get(wait_id)
            args = _first_line(str(record.arguments))
            text = f"Approval needed: the agent wants to call {record.tool!r} with {args}."
            families = proposed_families(card) if record.tool == "execute" else []
            if buttons and families:
                text += (
                    f"\n{REMEMBER_LABEL} also allows from now on, for this agent: "
                    + ", ".join(families)
                    + "."
                )
            if not buttons:
                text += "\nReply 1 to approve or 2 to deny."
            choices = approval_choices(wait_id, remember=bool(families)) if buttons else ()
            return Outbound(chat_id=chat.chat_id, text=text, thread=chat.thread, choices=choices)
        if kind == "question" and self._questions is not None:
            asked = await self._questions.store.get(wait_id)
            lines = ["The agent asks:"]
            for number, question in enumerate(asked.questions, start=1):
                lines.append(f"{number}. {question.question}")
                lines += [f"   {i}) {o}" for i, o in enumerate(question.options, start=1)]
            single = len(asked.questions) == 1 and not asked.questions[0].multi_select
            if buttons and single and asked.questions[0].options:
                choices = tuple(
                    Choice(option, f"q:{wait_id}:{i}")
                    for i, option in enumerate(asked.questions[0].options, start=1)
                )
                return Outbound(
                    chat_id=chat.chat_id, text="\n".join(lines), thread=chat.thread, choices=choices
                )
            lines.append(
                "Reply with your answer (an option's number or your own words); for several "
                "questions, one answer per line."
            )
            return Outbound(chat_id=chat.chat_id, text="\n".join(lines), thread=chat.thread)
        return None

    # -- sending ----------------------------------------------------------------------------

    async def deliver(
        self,
        connection_name: str,
        message: Outbound,
        *,
        first_part: int = 0,
        key: str = "",
        progress: _Progress | None = None,
    ) -> Delivered:
        """Send ``message`` now (split to the vendor's limit, from piece ``first_part``),
        counting sends, retries and failures on the connection."""
        connection = await self._store.connection(connection_name)
        if connection is None:
            return Delivered(ok=False, error=f"the channel {connection_name!r} is gone")
        vendor = self._vendors[connection.provider]
        secrets = await self._secrets_of(connection)
        live = await self._kernel.live_settings()
        web = self._kernel.services.web
        if web is None:
            await self._store.count(connection.name, "failures", error="no web access installed")
            return Delivered(ok=False, error="no web access installed")
        url = vendor.api_url(connection.fields, secrets)
        poster = vendor_poster(web.fetcher(live), live, url)
        encode = escape_markdown_v2 if vendor.provider == "telegram" else (lambda s: s)
        pieces = split_text(message.text, vendor.max_chars, encode=encode)

        async def note_retry(error: str) -> None:
            await self._store.count(connection.name, "retries", error=error)

        ref: str | None = None
        for index, piece in enumerate(pieces):
            if index < first_part:
                continue
            last = index == len(pieces) - 1
            part = Outbound(
                chat_id=message.chat_id,
                text=piece,
                thread=message.thread,
                choices=message.choices if last else (),
                key=f"{key}:{index}" if key else "",
            )
            try:
                ref = await send_with_retry(
                    vendor,
                    poster,
                    connection.fields,
                    secrets,
                    part,
                    attempts=int(live["channels_send_attempts"]),
                    base_delay_s=int(live["channels_retry_base_ms"]) / 1000,
                    outage_s=float(live["channels_outage_retry_s"]),
                    max_delay_s=float(live["channels_claim_lease_s"]) / 2,
                    note_retry=note_retry,
                    before_try=progress.before_try(index) if progress else None,
                    refused=progress.refused(index) if progress else None,
                    sleep=self._sleep,
                )
            except SendFailed as exc:
                await self._store.count(connection.name, "failures", error=str(exc))
                return Delivered(ok=False, error=str(exc))
            if progress is not None:
                await progress.after(index, True)
                if progress.lost():
                    return Delivered(ok=False, error="another process took the chat over")
            await self._store.count(connection.name, "sent")
        return Delivered(ok=True, ref=ref, text=pieces[-1] if pieces else "")

    async def edit(self, connection_name: str, chat_id: str, message_ref: str, text: str) -> bool:
        """Replace a sent message's text (already in the vendor's encoding) and drop its
        buttons, once; False when the vendor cannot edit or refused (logged)."""
        connection = await self._store.connection(connection_name)
        web = self._kernel.services.web
        if connection is None or web is None:
            return False
        vendor = self._vendors[connection.provider]
        if not isinstance(vendor, EditsMessages):
            return False
        secrets = await self._secrets_of(connection)
        live = await self._kernel.live_settings()
        poster = vendor_poster(web.fetcher(live), live, vendor.api_url(connection.fields, secrets))
        try:
            await vendor.edit(poster, secrets, chat_id, message_ref, text)
        except SendFailed as exc:
            log.warning("channel %r: a message was not edited: %s", connection_name, exc)
            return False
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivered:
    """How a delivery ended: sent, or the reason it was not."""

    ok: bool
    error: str = ""
    ref: str | None = None
    """The vendor's id of the last piece sent (the one with the buttons), if it gives one."""
    text: str = ""
    """That piece's text, in the vendor's encoding."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Progress:
    """The relay's notes around each vendor call of one row (its claim's in-flight mark)."""

    before: Callable[[int], Awaitable[None]]
    after: Callable[[int, bool], Awaitable[None]]
    lost: Callable[[], bool]

    def before_try(self, part: int) -> Callable[[], Awaitable[None]]:
        async def note() -> None:
            await self.before(part)

        return note

    def refused(self, part: int) -> Callable[[], Awaitable[None]]:
        async def note() -> None:
            await self.after(part, False)

        return note
