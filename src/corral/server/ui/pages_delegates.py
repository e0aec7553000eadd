"""The Delegates tab: a conversation's delegate runs (a list that follows them live), and
each run's transcript read-only.

The list and the transcript page read through the delegation service with the signed-in
user, so they show exactly what ``GET /conversations/{id}/delegates`` and
``GET /delegates/{run}`` would (another person's run is a 404). The transcript is the child
run's own rows, folded and rendered by the chat's timeline and templates; while the run
goes on, the page follows it on the chat's stream machinery, restricted to that run, and an
approval its tools wait for is decided on its card as in the chat.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from sse_starlette import EventSourceResponse

from corral.runtime.delegation import Delegation
from corral.runtime.events import Subscription
from corral.runtime.runs import ACTIVE
from corral.server.ui.access import PageCaller, SignedIn, UiRoute
from corral.server.ui.delegate_waits import open_child_cards
from corral.server.ui.render import templates
from corral.server.ui.stream import timeline_stream
from corral.server.ui.timeline import TimelineView

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


def _page(name: str, who: SignedIn, **values: Any) -> Response:
    return HTMLResponse(templates.get_template(name).render(who=who, **values))


async def _delegate(who: SignedIn, run_id: str) -> tuple[dict[str, Any], str]:
    """The run as ``GET /delegates/{run}`` shows it (NotFound unless the caller may read
    it) and the id of the child's own conversation."""
    shown = await who.platform.services.require(Delegation).show(run_id, user=who.user)
    record = await who.platform.runtime.run(run_id, user=who.user)
    return shown, record.conversation_id


def head_html(run: dict[str, Any], *, oob: bool) -> str:
    """The run's status, task and (once it ended) its answer, above its transcript."""
    return templates.get_template("_delegate_head.html").render(
        run=run, oob=oob, active=run["status"] in ACTIVE
    )


async def _listing(who: SignedIn, conversation_id: str) -> dict[str, Any]:
    """What the list shows: the runs, the answers of those that ended, open approvals."""
    delegation = who.platform.services.require(Delegation)
    runs = await delegation.list_delegates(conversation_id, user=who.user)
    answers = {}
    for run in runs:
        if run["status"] not in ACTIVE:
            answers[run["run_id"]] = (await delegation.show(run["run_id"], user=who.user))["answer"]
    approvals = [a for a in await who.platform.pending_approvals(user=who.user) if a.run_id]
    return {"runs": runs, "answers": answers, "approvals": approvals}


@router.get("/c/{conversation_id}/delegates")
async def delegates_tab(conversation_id: str, who: PageCaller) -> Response:
    conversation = await who.platform.runtime.conversation(conversation_id, user=who.user)
    listing = await _listing(who, conversation_id)
    return _page("delegates.html", who, conversation=conversation, tab="delegates", **listing)


async def _list_stream(who: SignedIn, conversation_id: str) -> AsyncIterator[dict[str, str]]:
    """The list again whenever the conversation or one of its children stores a row or
    changes a run's status (bursts coalesce into one)."""
    rt = who.platform.runtime
    changed: asyncio.Queue[None] = asyncio.Queue()
    pumps: dict[str, asyncio.Task[None]] = {}

    async def pump(live: Subscription) -> None:
        async for event in live:
            if event["type"] in ("row", "run"):
                changed.put_nowait(None)

    async with AsyncExitStack() as stack:

        async def follow(conversation_ids: list[str]) -> bool:
            """Subscribe to the ones not followed yet; True when there were any."""
            fresh = [c for c in conversation_ids if c not in pumps]
            for followed in fresh:
                live = await stack.enter_async_context(rt.events.subscribe(followed))
                pumps[followed] = asyncio.create_task(pump(live))
            return bool(fresh)

        stack.callback(lambda: [task.cancel() for task in pumps.values()])
        await follow([conversation_id])
        while True:
            listing = await _listing(who, conversation_id)
            children = [await rt.runs.get(r["run_id"]) for r in listing["runs"]]
            if await follow([child.conversation_id for child in children]):
                continue  # read again: a new child may have moved before it was followed
            html = templates.get_template("_delegate_list.html").render(who=who, **listing)
            yield {"event": "list", "data": html}
            await changed.get()
            while not changed.empty():
                changed.get_nowait()


@router.get("/c/{conversation_id}/delegates/stream")
async def delegates_events(conversation_id: str, who: PageCaller) -> EventSourceResponse:
    """The Delegates tab's list, live: new runs, their statuses and open approvals."""
    await who.platform.runtime.conversation(conversation_id, user=who.user)
    return EventSourceResponse(_list_stream(who, conversation_id))


@router.get("/delegates/{run_id}")
async def delegate_page(run_id: str, who: PageCaller) -> Response:
    """One delegate run read-only: its head, and its transcript rendered as the chat's."""
    rt = who.platform.runtime
    run, child_id = await _delegate(who, run_id)
    conversation = await rt.conversation(run["parent_conversation_id"], user=who.user)
    rows = await rt.rows(child_id, user=who.user)
    view = TimelineView.of(r for r in rows if r.run_id == run_id)
    await open_child_cards(who, view)
    return _page(
        "delegate.html",
        who,
        conversation=conversation,
        run=run,
        head=Markup(head_html(run, oob=False)),  # rendered by the autoescaping templates
        view=view,
        conversation_id=child_id,
        tab="delegates",
    )


@router.get("/delegates/{run_id}/stream")
async def delegate_events(
    request: Request, run_id: str, who: PageCaller, after: int = 0
) -> EventSourceResponse:
    """The run's new rows, streamed text and output, and its head again when its status
    changes; ``Last-Event-ID`` (a reconnect) wins over ``after``."""
    delegation = who.platform.services.require(Delegation)
    _, child_id = await _delegate(who, run_id)
    last = request.headers.get("last-event-id", "")
    start = int(last) if last.isdigit() else max(after, 0)

    async def head(_event: dict[str, Any]) -> str:
        return head_html(await delegation.show(run_id, user=who.user), oob=True)

    return EventSourceResponse(
        timeline_stream(who, child_id, after=start, status_html=head, run_id=run_id)
    )
