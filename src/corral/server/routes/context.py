"""Questions, goals, compactions and a conversation's meta: the routes of the interaction
and context tools."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.runtime.compaction import Compactions
from corral.runtime.goals import Goals
from corral.runtime.questions import Questions
from corral.server.deps import PERSON_ONLY, CallerDep, PlatformDep

router = APIRouter(tags=["context"])


class AnswerBody(BaseModel):
    answers: list[str | int | list[str | int]] = Field(
        description="One answer per question, in order: text, an option's number (from 1), "
        "or for a multi-select question a list of these."
    )
    note: str | None = Field(default=None, description="A note for the agent.")


class GoalBody(BaseModel):
    goal: str = Field(description="The outcome to reach, in one sentence.")
    conditions: list[str] = Field(default_factory=list, description="Acceptance conditions.")
    steps: list[str] = Field(default_factory=list, description="Todo steps.")
    loop: int | None = Field(default=None, ge=1, description="Cycles the agent may take.")
    workflow: str | None = Field(
        default=None, description="Set it as this workflow (template name) instead of as you."
    )
    evolve: Literal["agent"] | None = Field(
        default=None, description='The template\'s evolve setting: "agent" lifts the lock.'
    )
    replace: bool = Field(default=False, description="Clear an open goal first.")


class AppliedBody(BaseModel):
    applied: bool = Field(description="false shows the rows in full; true trims them again.")


class SummarizeBody(BaseModel):
    model: str | None = Field(default=None, description="provider:model to write the summary.")


@router.get("/questions")
async def list_questions(
    platform: PlatformDep, caller: CallerDep, status: str | None = "open"
) -> dict[str, Any]:
    found = await platform.services.require(Questions).list_questions(
        user=caller.user_id, status=None if status == "all" else status
    )
    return {"questions": [q.to_json() for q in found]}


@router.post("/questions/{question_id}/answer", dependencies=[PERSON_ONLY])
async def answer_question(
    question_id: str, body: AnswerBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Answer a question; the waiting run continues with the answers as its result."""
    record = await platform.services.require(Questions).answer(
        question_id, body.answers, surface="http", note=body.note, user=caller.user_id
    )
    return record.to_json()


@router.get("/conversations/{conversation_id}/meta")
async def read_meta(conversation_id: str, platform: PlatformDep, caller: CallerDep) -> Any:
    """Goal, todo list, loop bound, sessionLedger, compactions and questions, as JSON."""
    return await platform.conversation_meta(conversation_id, user=caller.user_id)


@router.put("/conversations/{conversation_id}/goal", dependencies=[PERSON_ONLY])
async def set_goal(
    conversation_id: str, body: GoalBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Set the goal as you (or a workflow): locked to the agent unless evolve is "agent"."""
    state = await platform.services.require(Goals).set_goal(
        conversation_id,
        body.goal,
        conditions=body.conditions,
        steps=body.steps,
        loop=body.loop,
        workflow=body.workflow,
        evolve=body.evolve,
        replace=body.replace,
        user=caller.user_id,
    )
    return state.to_json()


@router.delete("/conversations/{conversation_id}/goal", dependencies=[PERSON_ONLY])
async def clear_goal(
    conversation_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    state = await platform.services.require(Goals).clear_goal(conversation_id, user=caller.user_id)
    return state.to_json()


@router.get("/conversations/{conversation_id}/compactions")
async def list_compactions(
    conversation_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    found = await platform.services.require(Compactions).list_compactions(
        conversation_id, user=caller.user_id
    )
    return {"compactions": found}


@router.put("/conversations/{conversation_id}/compactions/{compaction_id}/applied")
async def set_applied(
    conversation_id: str,
    compaction_id: str,
    body: AppliedBody,
    platform: PlatformDep,
    caller: CallerDep,
) -> dict[str, Any]:
    """Show full (applied: false) or trim again (applied: true)."""
    return await platform.services.require(Compactions).set_applied(
        conversation_id, compaction_id, body.applied, user=caller.user_id
    )


@router.post("/conversations/{conversation_id}/show-full")
async def show_full(
    conversation_id: str, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Switch every compaction of the conversation off."""
    found = await platform.services.require(Compactions).show_full(
        conversation_id, user=caller.user_id
    )
    return {"compactions": found}


@router.post("/conversations/{conversation_id}/summarize")
async def summarize(
    conversation_id: str, body: SummarizeBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """/summarize: a model-written summary stands in for the conversation so far."""
    return await platform.services.require(Compactions).summarize(
        conversation_id, model=body.model, user=caller.user_id
    )
