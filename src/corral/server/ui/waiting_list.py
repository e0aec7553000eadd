"""What waits for the signed-in person across conversations: their pending approvals and
open questions, each linked to the conversation they started (a delegate child's decision
links to the top conversation, where its card shows in the delegate's place).

Read through the same platform calls as ``corral approvals list`` and ``GET /questions``,
so the list shows exactly what the person may answer. The header shows it as a count and
a list of links; the conversation list marks the conversations with it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from corral.errors import NotFound
from corral.runtime.questions import Questions
from corral.server.ui.access import SignedIn

__all__ = ["Waiting", "waiting_counts", "waiting_for"]

_MAX_DEPTH = 8
_WHAT_CHARS = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """One decision the person is waited on for."""

    kind: str
    """``approval`` or ``question``."""
    id: str
    what: str
    conversation_id: str
    """The conversation to open: the top one when the decision is a delegate child's."""
    title: str
    delegated: bool
    created_at: datetime


def _clip(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _WHAT_CHARS else line[: _WHAT_CHARS - 1] + "…"


async def _top(who: SignedIn, conversation_id: str) -> str:
    """The conversation whose delegate calls (through any depth) started this one."""
    conversations = who.platform.runtime.conversations
    for _ in range(_MAX_DEPTH):
        parent = await conversations.delegated_from(conversation_id)
        if parent is None:
            break
        conversation_id = parent
    return conversation_id


async def waiting_for(who: SignedIn) -> list[Waiting]:
    """The person's pending decisions, oldest first (those of unreadable conversations and
    of MCP sessions without a conversation are left out: the UI has nowhere to show them)."""
    rt = who.platform.runtime
    found: list[tuple[str, str, str, str | None, datetime]] = []
    for approval in await who.platform.pending_approvals(user=who.user):
        conversation_id = approval.conversation_id
        if conversation_id is None and approval.run_id is not None:
            run = await rt.runs.find(approval.run_id)
            conversation_id = run.conversation_id if run is not None else None
        command = approval.arguments.get("command") if approval.tool == "execute" else None
        what = f"{approval.tool}: {command}" if isinstance(command, str) else approval.tool
        found.append(("approval", approval.id, what, conversation_id, approval.created_at))
    questions = who.platform.services.get(Questions)
    if questions is not None:
        for asked in await questions.list_questions(user=who.user, status="open"):
            first = asked.questions[0].question if asked.questions else "a question"
            found.append(("question", asked.id, first, asked.conversation_id, asked.created_at))
    shown: list[Waiting] = []
    for kind, wait_id, what, conversation_id, created_at in sorted(found, key=lambda f: f[4]):
        if conversation_id is None:
            continue
        top = await _top(who, conversation_id)
        try:
            conversation = await rt.conversation(top, user=who.user)
        except NotFound:
            continue
        shown.append(
            Waiting(
                kind=kind,
                id=wait_id,
                what=_clip(what),
                conversation_id=top,
                title=conversation.title or top,
                delegated=top != conversation_id,
                created_at=created_at,
            )
        )
    return shown


def waiting_counts(waiting: list[Waiting]) -> dict[str, int]:
    """How many decisions wait in each conversation."""
    return dict(Counter(w.conversation_id for w in waiting))
