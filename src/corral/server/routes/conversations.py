"""Conversations: list, create, read, chat, the inbox, the live event stream; runs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse

from corral.policy.identity import Caller
from corral.runtime.runtime import Runtime
from corral.server.deps import CallerDep, PlatformDep, TicketDep
from corral.server.sse import conversation_events

router = APIRouter(tags=["conversations"])


class NewConversation(BaseModel):
    agent: str | None = Field(default=None, description="Agent to talk to (default agent).")
    model: str | None = Field(default=None, description="provider:model for its turns.")
    profile: str | None = Field(default=None, description="safe, balanced or auto.")
    title: str = Field(default="", description="A title for people.")


class Message(BaseModel):
    message: str = Field(description="What the person says.")
    model: str | None = Field(default=None, description="Switch the conversation's model.")
    profile: str | None = Field(default=None, description="Switch its permission profile.")
    wait: bool = Field(
        default=True,
        description="Answer when the turn finished or parked; false answers at once (follow "
        "the turn on the events stream).",
    )


class Chat(Message):
    agent: str | None = Field(default=None, description="Agent, for a new conversation.")
    conversation_id: str | None = Field(default=None, description="Continue this one.")


class InboxMessage(BaseModel):
    text: str = Field(description="The message; the receiver reads it as untrusted data.")
    from_conversation_id: str | None = Field(
        default=None, description="Your conversation the message comes from."
    )
    from_run_id: str | None = Field(default=None, description="Your run the message comes from.")


async def _turn(rt: Runtime, body: Message, caller: Caller, **where: Any) -> dict[str, Any]:
    # The caller the token dependency resolved goes down the turn: resolved once per request.
    options = {"model": body.model, "profile": body.profile, "caller": caller, **where}
    if body.wait:
        return (await rt.chat(body.message, **options)).to_json()
    run = await rt.start_chat(body.message, **options)
    return {"run_id": run.id, "conversation_id": run.conversation_id, "status": run.status}


@router.get("/conversations")
async def list_conversations(platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    rt = platform.runtime
    found = await rt.list_conversations(user=caller.user_id)
    return {"conversations": [c.to_json() for c in found]}


@router.post("/conversations", status_code=201)
async def create_conversation(
    body: NewConversation, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    conversation = await platform.runtime.start_conversation(
        agent=body.agent,
        caller=caller,
        model=body.model,
        profile=body.profile,
        title=body.title,
    )
    return conversation.to_json()


@router.get("/conversations/{conversation_id}")
async def read_conversation(
    conversation_id: str, platform: PlatformDep, caller: CallerDep, after: int = 0
) -> dict[str, Any]:
    rt = platform.runtime
    conversation = await rt.conversation(conversation_id, user=caller.user_id)
    rows = await rt.rows(conversation_id, user=caller.user_id, after=after)
    return {"conversation": conversation.to_json(), "rows": [r.to_json() for r in rows]}


@router.post("/conversations/{conversation_id}/messages")
async def send_message(
    conversation_id: str, body: Message, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """A person's message: runs the turn (see ``wait``)."""
    return await _turn(platform.runtime, body, caller, conversation_id=conversation_id)


@router.post("/chat")
async def chat(body: Chat, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """A message to an agent, in a new conversation or ``conversation_id``."""
    return await _turn(
        platform.runtime,
        body,
        caller,
        agent=body.agent,
        conversation_id=body.conversation_id,
    )


@router.post("/conversations/{conversation_id}/inbox", status_code=202)
async def queue_inbox_message(
    conversation_id: str,
    body: InboxMessage,
    platform: PlatformDep,
    caller: CallerDep,
    ticket: TicketDep,
) -> dict[str, Any]:
    """Queue a message from your agent; the conversation continues by itself as you.

    With a session ticket the sender is always the ticket's own run and conversation,
    whatever the body claims."""
    origin = (body.from_conversation_id, body.from_run_id)
    if ticket is not None:
        origin = (ticket.conversation_id, ticket.run_id)
    delivery = await platform.runtime.send_message(
        conversation_id,
        body.text,
        caller=caller,
        from_conversation_id=origin[0],
        from_run_id=origin[1],
    )
    return delivery.to_json()


@router.get("/conversations/{conversation_id}/events")
async def events(
    request: Request,
    conversation_id: str,
    platform: PlatformDep,
    caller: CallerDep,
    after: int = 0,
    follow: bool = True,
) -> EventSourceResponse:
    """Server-sent events: rows after ``after``, then live rows, text deltas, tool output
    and run status changes. A row's SSE ``id`` is its number: a reconnecting browser's
    ``Last-Event-ID`` wins over ``after``, so it gets only the rows it missed."""
    rt = platform.runtime
    await rt.conversation(conversation_id, user=caller.user_id)
    last = request.headers.get("last-event-id", "").strip()
    start = int(last) if last.isdigit() else max(after, 0)
    stream = conversation_events(
        rt, conversation_id, user=caller.user_id, after=start, follow=follow
    )
    return EventSourceResponse(stream)


@router.get("/runs/{run_id}", tags=["runs"])
async def read_run(run_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    rt = platform.runtime
    shown = (await rt.result((await rt.run(run_id, user=caller.user_id)).id)).to_json()
    shown["budget"] = await rt.run_budget(run_id, user=caller.user_id)
    return shown


@router.post("/runs/{run_id}/stop", tags=["runs"])
async def stop_run(run_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """Stop a run and everything it started; what it captured is kept."""
    return (await platform.runtime.stop(run_id, user=caller.user_id)).to_json()


@router.get("/conversations/{conversation_id}/budget")
async def read_conversation_budget(
    conversation_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """The budget each run of the conversation gets at most (``{}``: none)."""
    return await platform.runtime.conversation_budget(conversation_id, user=caller.user_id)


@router.put("/conversations/{conversation_id}/budget")
async def set_conversation_budget(
    conversation_id: str, limits: dict[str, Any], platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Set the budget of the conversation's later runs (owner only; ``{}`` clears it), e.g.
    ``{"total_tokens": 200000, "cost_usd": 2, "per_tool": {"execute": 40}}``."""
    return await platform.runtime.set_conversation_budget(
        conversation_id, limits, user=caller.user_id
    )
