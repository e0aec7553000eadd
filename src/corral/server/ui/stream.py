"""The chat page's live stream: timeline rows, streamed text, tool output and run status as
HTML fragments for htmx's SSE extension.

Like the API's stream (:mod:`corral.server.sse`) it subscribes before reading the backlog,
so nothing falls between the two, and every row event carries its sequence number as the
SSE ``id``: a browser that reconnects sends ``Last-Event-ID`` and gets exactly the rows it
missed. A row that changes an entry already on the page (a result for a running card, a
decision on an approval) is sent as an out-of-band swap of that entry's element.

The same stream serves a delegate run's transcript page, restricted to that run's rows and
events; the chat page alone also gets the continuations offered to its user (``claim``,
see :mod:`corral.server.ui.claims`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Any

from markupsafe import escape

from corral.runtime.events import Event, Subscription
from corral.runtime.timeline import TimelineRow
from corral.server.ui.access import SignedIn
from corral.server.ui.delegate_waits import show_child_waits
from corral.server.ui.render import templates
from corral.server.ui.timeline import CallCard, Change, TimelineView

__all__ = [
    "StatusHtml",
    "budget_html",
    "chat_stream",
    "claim_html",
    "entry_html",
    "run_bar_html",
    "timeline_stream",
]


def entry_html(who: SignedIn, change: Change, conversation_id: str) -> str:
    """One timeline entry; out-of-band when it replaces one already on the page."""
    html = templates.get_template("_entry.html").render(
        entry=change.entry, who=who, conversation_id=conversation_id
    )
    if change.new:
        return html
    return html.replace(" data-entry", ' hx-swap-oob="outerHTML" data-entry', 1)


def run_bar_html(
    conversation_id: str, who: SignedIn, status: str | None, run_id: str | None, *, oob: bool
) -> str:
    """The bar under the chat that says what the turn does, with Stop while it runs."""
    return templates.get_template("_runbar.html").render(
        conversation_id=conversation_id, status=status, run_id=run_id, who=who, oob=oob
    )


def budget_html(budget: str, *, oob: bool) -> str:
    """The conversation header's spent/limit line (hidden while no budget applies)."""
    return templates.get_template("_budget.html").render(budget=budget, oob=oob)


def _row_message(html: str, seq: int) -> dict[str, str]:
    return {"event": "row", "data": html, "id": str(seq)}


StatusHtml = Callable[[dict[str, Any]], Awaitable[str]]
"""Renders a ``run`` event (a status change) as the page's out-of-band fragment."""


def claim_html(conversation_id: str, offer_id: str) -> str:
    """A fragment that claims an offered continuation as soon as the page takes it in."""
    vals = escape(json.dumps({"offer": offer_id}))
    return (
        f'<div class="claim" hx-post="/ui/c/{escape(conversation_id)}/claim" '
        f'hx-trigger="load" hx-vals="{vals}" hx-swap="none"></div>'
    )


async def chat_stream(
    who: SignedIn, conversation_id: str, *, after: int
) -> AsyncIterator[dict[str, Any]]:
    """SSE messages for the chat page of ``conversation_id`` from sequence ``after`` on;
    continuations offered to this user (see :mod:`corral.server.ui.claims`) as ``claim``."""

    async def bar(event: dict[str, Any]) -> str:
        status, run_id = str(event["status"]), event["run_id"]
        # The header's spent/limit follows the run as its status changes.
        budget = await who.platform.runtime.budget_line(conversation_id, user=who.user)
        return run_bar_html(conversation_id, who, status, run_id, oob=True) + budget_html(
            budget, oob=True
        )

    async for message in timeline_stream(who, conversation_id, after=after, status_html=bar):
        yield message


async def timeline_stream(
    who: SignedIn,
    conversation_id: str,
    *,
    after: int,
    status_html: StatusHtml,
    run_id: str | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """SSE messages for a page showing ``conversation_id`` (only ``run_id``'s part of it,
    when given) from sequence ``after`` on.

    A delegate card that waits on its child shows the child's pending cards
    (:mod:`corral.server.ui.delegate_waits`); the stream follows the child conversations
    it read and redraws the card when one of them moves."""
    rt = who.platform.runtime
    await rt.conversation(conversation_id, user=who.user)

    def shown(row: TimelineRow) -> bool:
        return run_id is None or row.run_id == run_id

    async with AsyncExitStack() as stack:
        events: asyncio.Queue[tuple[str, Event]] = asyncio.Queue()
        pumps: dict[str, asyncio.Task[None]] = {}
        stack.callback(lambda: [task.cancel() for task in pumps.values()])
        watchers: dict[str, set[str]] = {}
        """A followed child conversation → the call ids of the cards that show it."""

        async def follow(followed: str) -> None:
            if followed not in pumps:
                live = await stack.enter_async_context(rt.events.subscribe(followed))
                pumps[followed] = asyncio.create_task(_pump(followed, live, events))

        async def watch(card: CallCard) -> None:
            await show_child_waits(who, card)
            for followed in card.followed:
                watchers.setdefault(followed, set()).add(card.call_id)
                await follow(followed)

        async def rendered(change: Change | None) -> str:
            if change is None:
                return ""
            if isinstance(change.entry, CallCard):
                await watch(change.entry)
            return entry_html(who, change, conversation_id)

        await follow(conversation_id)
        rows = await rt.rows(conversation_id, user=who.user)
        view = TimelineView.of(r for r in rows if r.seq <= after and shown(r))
        for card in list(view.calls.values()):
            if card.wait_kind == "delegate":
                await watch(card)
        for row in rows:
            if row.seq > after and shown(row):
                yield _row_message(await rendered(view.add(row)), row.seq)
        while True:
            source, event = await events.get()
            kind = event["type"]
            if source != conversation_id:
                if kind in ("row", "run"):
                    for call_id in sorted(watchers.get(source, ())):
                        redrawn = await rendered(Change(view.calls[call_id], new=False))
                        yield {"event": "output", "data": redrawn}
                continue
            if run_id is not None and event.get("run_id", run_id) != run_id:
                continue
            if kind == "row":
                row = TimelineRow.stored(**_row_fields(event["row"]))
                if row.seq <= view.last_seq or not shown(row):
                    continue
                html = await rendered(view.add(row))
                if row.kind == "model_turn":
                    html += '<div id="live" hx-swap-oob="innerHTML"></div>'
                yield _row_message(html, row.seq)
            elif kind == "delta":
                yield {"event": "delta", "data": str(escape(event["text"]))}
            elif kind == "output":
                text = escape(event["text"])
                target = f"out-{event['call_id']}"
                yield {
                    "event": "output",
                    "data": f'<span hx-swap-oob="beforeend:#{target}">{text}</span>',
                }
            elif kind == "run":
                yield {"event": "status", "data": await status_html(event)}
            elif kind == "claim" and run_id is None and event["user_id"] == who.user:
                yield {"event": "claim", "data": claim_html(conversation_id, event["offer"])}


async def _pump(source: str, live: Subscription, into: asyncio.Queue[tuple[str, Event]]) -> None:
    async for event in live:
        into.put_nowait((source, event))


def _row_fields(raw: dict[str, Any]) -> dict[str, Any]:
    created = raw.get("created_at")
    return {
        "seq": int(raw["seq"]),
        "kind": raw["kind"],
        "data": raw.get("data") or {},
        "run_id": raw.get("run_id"),
        "user_id": raw.get("user_id"),
        "call_id": raw.get("call_id"),
        "created_at": datetime.fromisoformat(created) if created else None,
    }
