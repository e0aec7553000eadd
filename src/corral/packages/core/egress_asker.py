"""A sandboxed command's question about a domain no egress rule matches, put to the person
who started the run (the egress policy says ``ask``).

It is a question record like an MCP server's elicitation (a pending decision offered on
every surface: the web UI, ``corral inbox``/``corral questions answer``, the HTTP API,
channels) with the answers of :data:`~corral.shell.egress.ask.ASK_OPTIONS`. The command's
connection is held meanwhile; the call's live output says which question waits. Not
answered within the wait, the question expires; a call that ends first closes it.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta

from corral.runtime.questions import AskedQuestion, Questions
from corral.runtime.questions.elicitation import EGRESS_MARK
from corral.shell.egress.ask import ASK_OPTIONS, Answer, AskAnswer
from corral.store.tables import utcnow
from corral.tools.context import CallContext

__all__ = ["RunEgressQuestion"]

_FIRST_LOOK = 0.05
_LONGEST_LOOK = 1.0
"""Seconds between looks at the question for its answer: doubling up to this."""
_ANSWERS: dict[str, Answer] = {
    ASK_OPTIONS[0]: "once",
    ASK_OPTIONS[1]: "agent",
    ASK_OPTIONS[2]: "deny",
}


class RunEgressQuestion:
    """Asks the person of ``ctx``'s run (the call must be part of one)."""

    def __init__(self, ctx: CallContext, questions: Questions) -> None:
        self._ctx = ctx
        self._questions = questions

    @classmethod
    def of(cls, ctx: CallContext) -> RunEgressQuestion | None:
        questions = ctx.services.get(Questions)
        if questions is None or ctx.run_id is None or ctx.conversation_id is None:
            return None
        return cls(ctx, questions)

    async def __call__(self, host: str, port: int, *, wait_seconds: float) -> AskAnswer:
        ctx = self._ctx
        assert ctx.run_id is not None and ctx.conversation_id is not None
        store = self._questions.store
        asked = AskedQuestion(
            question=f"The command of agent {ctx.agent!r} wants to reach {host}:{port}, which "
            "no egress rule allows. Allow it? (Any answer but the first two denies.)",
            options=ASK_OPTIONS,
        )
        record = await store.create(
            conversation_id=ctx.conversation_id,
            run_id=ctx.run_id,
            call_id=f"{ctx.call_id or ''}{EGRESS_MARK}{secrets.token_hex(4)}",
            user_id=ctx.caller.user_id,
            questions=[asked],
            # Past this the sweep ends it, should this process die while it waits.
            expires_at=utcnow() + timedelta(seconds=wait_seconds),
        )
        ctx.output(
            "stdout",
            f"[egress] {host}:{port} waits for your answer ({record.id}), at most "
            f"{wait_seconds:.0f} s: `corral questions answer {record.id} 1` allows it once, "
            "`2` for this agent, `3` denies\n",
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        pause = _FIRST_LOOK
        try:
            while True:
                current = await store.get(record.id)
                if current.status == "answered" and current.answers:
                    picked = current.answers[0]
                    answer = _ANSWERS.get(picked if isinstance(picked, str) else "", "deny")
                    ctx.output("stdout", f"[egress] {host}: {picked}\n")
                    return AskAnswer(answer=answer, decision_id=record.id)
                if current.status != "open":
                    return AskAnswer(
                        answer="unanswered",
                        decision_id=record.id,
                        detail=f"the question was {current.status}",
                    )
                now = loop.time()
                if now >= deadline:
                    if await store.expire(record.id, "expired: no answer in time"):
                        return AskAnswer(
                            answer="unanswered",
                            decision_id=record.id,
                            detail=f"no answer came within {wait_seconds:.0f} s",
                        )
                    continue  # answered just now: read it
                await asyncio.sleep(min(pause, max(deadline - now, 0.0)))
                pause = min(pause * 2, _LONGEST_LOOK)
        except asyncio.CancelledError:
            # The call ended first: nobody reads an answer any more.
            await asyncio.shield(store.close(record.id, "the command ended before an answer"))
            raise
