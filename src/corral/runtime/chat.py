"""A chat turn: a person's message to an agent, run to its end or its first wait."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from corral.errors import UsageError
from corral.kernel import DEFAULT_AGENT
from corral.policy.profiles import parse_profile
from corral.runtime.agents import AgentConfig, load_agent
from corral.runtime.caller_scope import CallerScope
from corral.runtime.events import Event, Subscription
from corral.runtime.prompt.attachments import expand
from corral.runtime.prompt_hooks import prompt_hooks
from corral.runtime.results import RunResult
from corral.runtime.timeline import NewRow
from corral.runtime.turns import start_scoped_turn, turn_spec

if TYPE_CHECKING:
    from corral.policy.identity import Caller
    from corral.runtime.conversations import ConversationInfo
    from corral.runtime.host import RunHost
    from corral.runtime.runs import RunRecord

__all__ = ["EventCallback", "busy_message", "chat"]

EventCallback = Callable[[Event], None]


async def busy_message(rt: RunHost, conversation: ConversationInfo) -> str:
    run = await rt.runs.find(conversation.active_run_id or "")
    if run is None:
        return f"conversation {conversation.id!r} has a turn in flight; wait for it to end"
    if run.status == "parked":
        asks = ", ".join(f"{w.kind} {w.id}" for w in run.waiting) or "an answer"
        return (
            f"conversation {conversation.id!r} is waiting: run {run.id} is parked on {asks}; "
            f"answer it (`corral approvals decide ID approve`, `corral questions answer ID "
            f"…`) or stop the run "
            f"(`corral runs stop {run.id}`)"
        )
    return (
        f"conversation {conversation.id!r} has a turn in flight (run {run.id}, {run.status}); "
        f"wait for it to end or stop it (`corral runs stop {run.id}`)"
    )


async def _forward(subscription: Subscription, on_event: EventCallback) -> None:
    async for event in subscription:
        on_event(event)


async def _conversation(
    rt: RunHost,
    caller: Caller,
    *,
    agent: str | None,
    model: str | None,
    profile: str | None,
    conversation_id: str | None,
) -> tuple[ConversationInfo, AgentConfig | None]:
    """The conversation a message goes to: a new one, or an existing one (switched to
    ``model``/``profile`` when given: the switch lasts for the conversation's later turns);
    with the agent when it was loaded on the way."""
    if conversation_id is None:
        config = await load_agent(rt.kernel.sessions, agent or DEFAULT_AGENT)
        created = await rt.create_conversation(caller, config, model=model, profile=profile)
        return created, config
    conversation = await rt.conversations.get(conversation_id)
    conversation.check_access(caller)
    if agent is not None and agent != conversation.agent:
        raise UsageError(
            f"conversation {conversation.id!r} belongs to agent {conversation.agent!r}; "
            "start a new conversation to talk to another agent"
        )
    changes: dict[str, str] = {}
    if profile is not None and profile != conversation.profile:
        changes["profile"] = parse_profile(profile)
    if model is not None and model != conversation.model:
        changes["model"] = model
    if changes:
        await rt.conversations.update(conversation.id, **changes)
        conversation = await rt.conversations.get(conversation.id)
    return conversation, None


async def _start(
    rt: RunHost,
    caller: Caller,
    opened: tuple[ConversationInfo, AgentConfig | None],
    message: str,
) -> RunRecord:
    try:
        return await _start_turn(rt, caller, opened, message)
    except Exception:
        if opened[1] is not None:  # made for this message, which was refused
            await rt.conversations.discard_unused(opened[0].id)
        raise


async def _start_turn(
    rt: RunHost,
    caller: Caller,
    opened: tuple[ConversationInfo, AgentConfig | None],
    message: str,
) -> RunRecord:
    conversation, config = opened
    created = config is not None  # loaded while making the conversation for this message
    config = config or await load_agent(rt.kernel.sessions, conversation.agent)
    spec = await turn_spec(
        rt,
        conversation,
        user_id=caller.user_id,
        trigger="user_message",
        agent=config,
        created=created,
    )
    # A model that cannot be used fails before any row is written.
    model = await rt.models.resolve_for(
        spec.model, user_id=caller.user_id, credentials=rt.kernel.services.credentials
    )
    data: dict[str, Any] = {"text": message}
    context = await prompt_hooks(rt.hooks, conversation, message)
    if context:
        data["hook_context"] = context
    attached = await expand(message, caller, rt.prompt.attachments)
    if attached:
        data["attachments"] = attached
    scope = CallerScope(caller=caller, agent=config, model=model, profile=spec.profile)
    started = await start_scoped_turn(
        rt, scope, spec, [NewRow(kind="user_message", user_id=caller.user_id, data=data)]
    )
    if started is None:
        raise UsageError(await busy_message(rt, await rt.conversations.get(conversation.id)))
    return started[0]


async def start_chat(
    rt: RunHost,
    message: str,
    *,
    agent: str | None = None,
    model: str | None = None,
    profile: str | None = None,
    conversation_id: str | None = None,
    user: str | None = None,
    caller: Caller | None = None,
) -> RunRecord:
    """Write the message and queue its run; returns at once (the run advances as a job).

    ``caller``: the caller the entry point resolved (then ``user`` is not looked at)."""
    if not message.strip():
        raise UsageError("a chat message needs some text")
    caller = caller if caller is not None else await rt.kernel.caller(user)
    opened = await _conversation(
        rt, caller, agent=agent, model=model, profile=profile, conversation_id=conversation_id
    )
    return await _start(rt, caller, opened, message)


async def chat(
    rt: RunHost,
    message: str,
    *,
    agent: str | None = None,
    model: str | None = None,
    profile: str | None = None,
    conversation_id: str | None = None,
    user: str | None = None,
    caller: Caller | None = None,
    on_event: EventCallback | None = None,
) -> RunResult:
    """Run one turn; returns when the run finished, parked or stopped.

    ``caller`` is the caller the entry point resolved (then ``user`` is not looked at).
    ``on_event`` receives the conversation's live events while the turn runs (see
    :mod:`corral.runtime.events`), from the user's own message on.
    """
    if not message.strip():
        raise UsageError("a chat message needs some text")
    caller = caller if caller is not None else await rt.kernel.caller(user)
    opened = await _conversation(
        rt, caller, agent=agent, model=model, profile=profile, conversation_id=conversation_id
    )
    conversation = opened[0]
    if on_event is None:
        run = await _start(rt, caller, opened, message)
        return await rt.result_of(await rt.wait_run(run.id))
    async with rt.events.subscribe(conversation.id) as subscription:
        run = await _start(rt, caller, opened, message)
        pump = asyncio.create_task(_forward(subscription, on_event))
        try:
            settled = await rt.wait_run(run.id)
        finally:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
        while (event := subscription.get_nowait()) is not None:
            on_event(event)
    return await rt.result_of(settled)
