"""A Stop while the model is being asked ends the run at once as stopped, and the run's
own task goes on to store that end (the model call runs in the run's task)."""

from __future__ import annotations

import asyncio
import time

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from corral.platform import Platform
from corral.runtime.runtime import Runtime


async def test_a_stop_while_the_model_thinks_stops_the_run(
    rt_platform: Platform, rt: Runtime
) -> None:
    asked = asyncio.Event()
    calls: list[int] = []

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        if len(calls) == 1:
            asked.set()
            await asyncio.Event().wait()  # never answers: only a Stop ends this call
        return ModelResponse(parts=[TextPart("answered")])

    rt.models.register("test:slow", FunctionModel(slow))
    conversation = await rt.start_conversation(model="test:slow")
    chat = asyncio.create_task(rt.chat("think long", conversation_id=conversation.id))
    await asyncio.wait_for(asked.wait(), 30)
    [run] = await rt.runs.list_runs(conversation_id=conversation.id)
    began = time.monotonic()
    stopped = await rt.stop(run.id)
    assert (stopped.status, stopped.reason) == ("stopped", "stopped")
    turn = await asyncio.wait_for(chat, 30)
    assert time.monotonic() - began < 10
    assert turn.status == "stopped" and calls == [1]
    assert (await rt.conversations.get(conversation.id)).active_run_id is None
    # The conversation goes on: the next turn asks the model again and is answered.
    again = await rt.chat("and now?", conversation_id=conversation.id)
    assert again.status == "finished" and calls == [1, 1]
