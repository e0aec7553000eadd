"""/summarize: a whole-conversation summary, asked of the model, kept as an overlay.

Not a tool: a person runs it (CLI, route, Python) on a conversation with no turn in
flight. The model reads the history as it reads it now (current trims applied) and writes a
summary; the summary then stands in the prompt for every row up to that point, as a
compaction of its own that "Show full" can switch off like any other.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pydantic_ai.messages import InstructionPart, ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from corral.errors import UsageError
from corral.policy.identity import Caller
from corral.runtime.agents import load_agent
from corral.runtime.compaction.cards import Compaction
from corral.runtime.compaction.overlay import CompactionOverlay
from corral.runtime.compaction.tokens import count_tokens, tokenizer_name
from corral.runtime.compaction.trims import prompt_text, summary_row
from corral.runtime.conversations import ConversationInfo
from corral.runtime.prompt.history import History, RenderContext
from corral.runtime.timeline import PROMPT_KINDS, TimelineRow
from corral.service_protocols import UsageRecord

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["INSTRUCTIONS", "summarize_conversation"]

INSTRUCTIONS = """\
You summarize a conversation between a user and an AI agent. Your summary replaces the \
conversation's history in the agent's context from now on, so keep everything the work \
still needs: the user's goals, decisions and preferences; facts, names, paths and \
identifiers found; what was done and what it produced; what failed and why; what is still \
open. Leave out greetings, repetition and raw tool output. Write compact prose or bullet \
points, at most about 600 words, and nothing else."""

REQUEST = "Summarize the conversation above as instructed."


def _count(rows: Sequence[TimelineRow], summary: TimelineRow) -> tuple[int, int]:
    before = sum(count_tokens(prompt_text(r)) for r in rows if r.kind in PROMPT_KINDS)
    return before, count_tokens(prompt_text(summary))


async def summarize_conversation(
    rt: RunHost,
    overlay: CompactionOverlay,
    conversation: ConversationInfo,
    caller: Caller,
    *,
    model: str | None = None,
) -> Compaction:
    """Ask the model for a summary of ``conversation`` and return it as a compaction (not
    stored yet)."""
    if conversation.active_run_id is not None:
        raise UsageError(
            f"conversation {conversation.id!r} has a turn in flight or waiting; summarize it "
            "once the turn has ended"
        )
    history = await rt.prompt.history(conversation.id, refresh=True)
    rows = list(history.rows)
    said = [r for r in rows if r.kind in PROMPT_KINDS]
    if not said:
        raise UsageError(f"conversation {conversation.id!r} has nothing to summarize yet")
    shown = overlay.index(conversation.id, history.rows).apply(rows)
    agent = await load_agent(rt.kernel.sessions, conversation.agent)
    spec = rt.pick_model(model, conversation, agent)
    resolved = rt.models.resolve(spec)
    state = await rt.kernel.config.dispatch_state()
    context = RenderContext(
        media=resolved.media, reader=rt.prompt.reader, caller=caller, sources=state.sources
    )
    messages: list[ModelMessage] = History().messages(shown, context)
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest):
        messages[-1] = ModelRequest(parts=[*last.parts, UserPromptPart(REQUEST)])
    else:
        messages.append(ModelRequest(parts=[UserPromptPart(REQUEST)]))
    parameters = ModelRequestParameters(
        function_tools=[],
        allow_text_output=True,
        instruction_parts=[InstructionPart(INSTRUCTIONS)],
    )
    response = await resolved.model.request(messages, None, parameters)
    text = (response.text or "").strip()
    if not text:
        raise UsageError(f"the model {spec!r} returned no summary; try again or another model")
    await rt.usage.record(
        UsageRecord(
            source="summarize",
            model=spec,
            user_id=caller.user_id,
            conversation_id=conversation.id,
            run_id=None,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
        )
    )
    draft = Compaction(
        id="cp_" + secrets.token_hex(6),
        source="summarize",
        action="summarize",
        summary=text,
        first_seq=said[0].seq,
        last_seq=rows[-1].seq,
        by=caller.name,
        tokenizer=tokenizer_name(),
    )
    covered = [r for r in shown if draft.first_seq <= r.seq <= draft.last_seq]
    before, after = await asyncio.to_thread(_count, covered, summary_row(draft))
    return replace(draft, tokens_before=before, tokens_after=after)
