"""A rewind holds its conversation so no run starts meanwhile; a rewind cut short by its
process dying does not leave the conversation held: recovery frees it, and only then."""

from __future__ import annotations

import asyncio
import socket

import pytest
from sqlalchemy import update

from corral.errors import ConversationBusy
from corral.platform import Platform
from corral.runtime.rewinds import holder_for
from corral.store import runtime_tables as rt


async def hold(platform: Platform, conversation_id: str, holder: str) -> None:
    async with platform.sessions.begin() as session:
        await session.execute(
            update(rt.Conversation)
            .where(rt.Conversation.id == conversation_id)
            .values(active_run_id=holder)
        )


async def test_a_held_conversation_refuses_a_rewind_and_recovery_frees_a_dead_holder(
    platform: Platform,
) -> None:
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()  # a real process that has ended: its worker id is dead
    dead = holder_for(f"{socket.gethostname()}:{gone.pid}:-")
    alive = holder_for(platform.runtime.worker)
    first = (await platform.runtime.start_conversation()).id
    second = (await platform.runtime.start_conversation()).id
    await hold(platform, first, dead)
    await hold(platform, second, alive)
    with pytest.raises(ConversationBusy, match="cannot rewind now"):
        await platform.rewind(first, "1")
    await platform.runtime.recover()
    assert (await platform.conversation(first)).active_run_id is None
    assert (await platform.conversation(second)).active_run_id == alive
