"""What a person does on a card: decide an approval, answer questions, switch a compaction's
"Show full", kill a background shell. Each is a CSRF-checked POST that calls the same
platform method as the API's route; the page follows the outcome on its live stream."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import escape

from corral.runtime.compaction import Compactions
from corral.runtime.questions import Questions
from corral.server.ui.access import SignedIn, UiRoute, require_csrf
from corral.shell.service import ShellService

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

Acting = Annotated[SignedIn, Depends(require_csrf)]


def _done(text: str) -> Response:
    return HTMLResponse(f"<p class='notice'>{escape(text)}</p>")


@router.post("/approvals/{approval_id}/decide")
async def decide_approval(
    approval_id: str,
    who: Acting,
    decision: Annotated[Literal["approve", "deny"], Form()],
    note: Annotated[str, Form()] = "",
    remember: Annotated[Literal["", "exact", "family"], Form()] = "",
    scope: Annotated[Literal["agent", "user", "project"], Form()] = "agent",
) -> Response:
    await who.platform.decide_approval(
        approval_id,
        decision,
        surface="web",
        note=note.strip() or None,
        user=who.user,
        remember=remember or None,
        scope=scope,
    )
    return Response(status_code=204)


@router.post("/questions/{question_id}/answer")
async def answer_questions(question_id: str, request: Request, who: Acting) -> Response:
    form = await request.form()
    count = str(form.get("count", "0"))
    answers: list[str | int | list[str | int]] = []
    for index in range(int(count) if count.isdigit() else 0):
        # Options are picked by number (q<i>); free text (text<i>) stays text, digits too.
        numbers = [str(v) for v in form.getlist(f"q{index}")]
        picked: list[str | int] = [int(v) for v in numbers if v.isdigit()]
        picked += [str(v) for v in form.getlist(f"text{index}")]
        if len(picked) == 1:
            answers.append(picked[0])
        else:
            answers.append(picked)
    note = str(form.get("note", "")).strip() or None
    await who.platform.services.require(Questions).answer(
        question_id, answers, surface="web", note=note, user=who.user
    )
    return Response(status_code=204)


@router.post("/c/{conversation_id}/compactions/{compaction_id}")
async def toggle_compaction(
    conversation_id: str,
    compaction_id: str,
    who: Acting,
    applied: Annotated[bool, Form()],
) -> Response:
    """Show full (applied false) or trim again: what the model sees from the next turn."""
    await who.platform.services.require(Compactions).set_applied(
        conversation_id, compaction_id, applied, user=who.user
    )
    return Response(status_code=204)


@router.post("/shells/{shell_id}/kill")
async def kill_shell(shell_id: str, who: Acting) -> Response:
    """SIGTERM to the shell's process group, SIGKILL after a grace; only its starter may."""
    record = await who.platform.services.require(ShellService).background.stop(shell_id, who.caller)
    return _done(f"shell {record.id} {record.status}")
