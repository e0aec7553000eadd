"""Conversations: the list with search, a new conversation, the chat page, its live stream,
sending a message, claiming a report's continuation, and Stop. Every call goes through the
runtime with the signed-in user, as the API's routes do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup
from sqlalchemy import select
from sse_starlette import EventSourceResponse

from corral.server.ui.access import PageCaller, SignedIn, UiRoute, require_csrf, ui_state
from corral.server.ui.conversation_states import conversation_states
from corral.server.ui.delegate_waits import open_child_cards
from corral.server.ui.render import templates
from corral.server.ui.stream import chat_stream, run_bar_html
from corral.server.ui.timeline import TimelineView
from corral.server.ui.waiting_list import waiting_counts, waiting_for
from corral.store import tables as t

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

Acting = Annotated[SignedIn, Depends(require_csrf)]


async def agent_names(who: SignedIn) -> list[str]:
    """The agents a conversation may be started with, the default first."""
    async with who.platform.kernel.sessions() as session:
        names = list((await session.scalars(select(t.Agent.name).order_by(t.Agent.name))).all())
    return sorted(names, key=lambda name: name != "default")


@router.get("")
async def conversations_page(who: PageCaller, q: str = "") -> Response:
    found = await who.platform.runtime.list_conversations(user=who.user)
    needle = q.strip().lower()
    shown = [c for c in found if needle in (c.title or c.id).lower()] if needle else found
    shown.sort(key=lambda c: c.updated_at, reverse=True)
    states = await conversation_states(who.platform.kernel.sessions, [c.id for c in shown])
    waiting = waiting_counts(await waiting_for(who))
    html = templates.get_template("conversations.html").render(
        who=who,
        conversations=shown,
        states=states,
        waiting=waiting,
        q=q,
        agents=await agent_names(who),
        default_model=who.platform.settings.default_model,
    )
    return HTMLResponse(html)


@router.post("/conversations")
async def new_conversation(
    who: Acting,
    agent: Annotated[str, Form()] = "default",
    model: Annotated[str, Form()] = "",
    profile: Annotated[str, Form()] = "balanced",
    title: Annotated[str, Form()] = "",
) -> Response:
    conversation = await who.platform.runtime.start_conversation(
        agent=agent or None,
        user=who.user,
        model=model.strip() or None,
        profile=profile or None,
        title=title.strip(),
    )
    return RedirectResponse(f"/ui/c/{conversation.id}", status_code=303)


@router.get("/c/{conversation_id}")
async def chat_page(conversation_id: str, who: PageCaller) -> Response:
    rt = who.platform.runtime
    conversation = await rt.conversation(conversation_id, user=who.user)
    view = TimelineView.of(await rt.rows(conversation_id, user=who.user))
    await open_child_cards(who, view)
    status = run_id = None
    if conversation.active_run_id is not None:
        run = await rt.run(conversation.active_run_id, user=who.user)
        status, run_id = run.status, run.id
    runbar = Markup(run_bar_html(conversation_id, who, status, run_id, oob=False))
    html = templates.get_template("chat.html").render(
        who=who,
        conversation=conversation,
        view=view,
        conversation_id=conversation_id,
        runbar=runbar,
        budget=await rt.budget_line(conversation_id, user=who.user),
    )
    return HTMLResponse(html)


@router.get("/c/{conversation_id}/stream")
async def chat_events(
    request: Request, conversation_id: str, who: PageCaller, after: int = 0
) -> EventSourceResponse:
    """The live stream; ``Last-Event-ID`` (a reconnect) wins over ``after``."""
    last = request.headers.get("last-event-id", "")
    start = int(last) if last.isdigit() else max(after, 0)
    await who.platform.runtime.conversation(conversation_id, user=who.user)
    claims = ui_state(request).claims

    async def watched() -> AsyncIterator[dict[str, Any]]:
        # While this stream is open its user counts as having the conversation open.
        with claims.watching(conversation_id, who.user):
            async for message in chat_stream(who, conversation_id, after=start):
                yield message

    return EventSourceResponse(watched())


@router.post("/c/{conversation_id}/claim")
async def claim_continuation(
    request: Request, conversation_id: str, who: Acting, offer: Annotated[str, Form()] = ""
) -> Response:
    """This page takes the continuation it was offered: the turn starts as the browser's."""
    await who.platform.runtime.conversation(conversation_id, user=who.user)
    await ui_state(request).claims.claim(conversation_id, offer, who.user)
    return Response(status_code=204)


@router.post("/c/{conversation_id}/messages")
async def send_message(
    conversation_id: str, who: Acting, message: Annotated[str, Form()] = ""
) -> Response:
    if not message.strip():
        return HTMLResponse("<p class='error'>Write a message first.</p>", status_code=400)
    await who.platform.runtime.start_chat(
        message, conversation_id=conversation_id, caller=who.caller
    )
    return Response(status_code=204)


@router.post("/runs/{run_id}/stop")
async def stop_run(run_id: str, who: Acting) -> Response:
    """Stop: the turn ends with its process groups, as the CLI's Stop does."""
    await who.platform.runtime.stop(run_id, user=who.user)
    return Response(status_code=204)
