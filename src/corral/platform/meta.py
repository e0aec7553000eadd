"""A conversation's meta document: its goal state and session ledger, compactions and
questions, exportable as JSON (``corral conversations meta ID``,
``GET /conversations/{id}/meta``)."""

from __future__ import annotations

from typing import Any

from corral.runtime.compaction import Compactions
from corral.runtime.goals import Goals
from corral.runtime.questions import Questions
from corral.runtime.runtime import Runtime
from corral.tools.services import Services

__all__ = ["conversation_meta"]


async def conversation_meta(
    runtime: Runtime, services: Services, conversation_id: str, *, user: str | None = None
) -> dict[str, Any]:
    """Everything the conversation carries besides its rows, as one JSON-able document.

    ``sessionLedger`` lists the closed cycles (goal and todo list as they were when each
    closed), oldest first, each with its ``version``.
    """
    conversation = await runtime.conversation(conversation_id, user=user)
    goals = services.require(Goals)
    state = await goals.store.load(conversation_id)
    questions = await services.require(Questions).store.list_questions(
        status=None, conversation_id=conversation_id
    )
    return {
        "conversation": conversation.to_json(),
        "goal": state.goal.to_json() if state.goal else None,
        "todos": [step.to_json() for step in state.steps],
        "loop": state.loop.to_json() if state.loop else None,
        "sessionLedger": await goals.store.ledger(conversation_id),
        "compactions": await services.require(Compactions).list_compactions(
            conversation_id, user=user
        ),
        "questions": [q.to_json() for q in questions],
    }
