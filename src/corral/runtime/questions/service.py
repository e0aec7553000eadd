"""ask_question's service: park the run on the questions, answer them, close them.

The handler stores the questions and returns a ``pending`` result naming the wait; the run
parks on it like on an approval (durable, nothing held open). :meth:`Questions.answer`, from
any process, marks the question answered and hands the answers to the waiting call through
:func:`~corral.runtime.parking.resolve_wait`, which queues the run again. A run that
ends first closes its open questions (a run-end hook), so no answer waits for a run that
will never read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from corral.errors import InvalidArguments, NotFound, ToolError, UsageError
from corral.kernel.decisions import Surface, already_decided, check_surface
from corral.runtime.parking import resolve_wait
from corral.runtime.questions.elicitation import is_elicitation
from corral.runtime.questions.model import (
    AnswerInput,
    AskedQuestion,
    QuestionRecord,
    check_answers,
    describe_questions,
    render_answers,
)
from corral.runtime.questions.store import QuestionStore
from corral.runtime.runs import RunRecord
from corral.tools.results import TextBlock, ToolResult
from corral.tools.services import CallScope

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["Questions"]


_OPEN = "SELECT 1 FROM questions WHERE run_id = ? AND status = 'open'"


class Questions:
    def __init__(self, runtime: RunHost) -> None:
        self._rt = runtime
        self.store = QuestionStore(runtime.kernel.sessions, runtime.kernel.approvals.decisions)

    # -- the tool's side ------------------------------------------------------------------

    async def ask(self, raw: Sequence[Mapping[str, Any]], ctx: CallScope) -> ToolResult:
        """Store the questions and park the calling run until a person answers."""
        questions = [AskedQuestion.from_json(q) for q in raw]
        for number, q in enumerate(questions, start=1):
            if q.multi_select and len(q.options) < 2:
                raise InvalidArguments(
                    f"question {number} sets multi_select but offers {len(q.options)} "
                    "option(s); give at least two options or drop multi_select"
                )
        if ctx.run_id is None or ctx.conversation_id is None:
            raise ToolError(
                "ask_question needs a conversation run with a person to answer; there is none "
                "here. Decide yourself, or say in your reply what you need to know.",
                code="no_conversation",
            )
        run = await self._rt.runs.get(ctx.run_id)
        record = await self.store.create(
            conversation_id=ctx.conversation_id,
            run_id=ctx.run_id,
            call_id=ctx.call_id,
            user_id=run.user_id,
            questions=questions,
        )
        text = (
            f"Waiting for the user to answer question {record.id} "
            f"(`corral questions answer {record.id} …`):\n{describe_questions(questions)}"
        )
        return ToolResult.wait_for(
            "question",
            record.id,
            text,
            data={"question_id": record.id, "questions": [q.to_json() for q in questions]},
        )

    async def close_for_run(self, run: RunRecord, status: str) -> None:
        """Run-end hook: an ended run's open questions can never be answered."""
        reader = self._rt.kernel.reader
        if reader is not None and reader.exists(_OPEN, (run.id,)) is False:
            return  # most runs ask none: answered without a write
        await self.store.close_for_run(run.id, f"the run ended ({status}) before an answer")

    # -- the person's side ----------------------------------------------------------------

    async def list_questions(
        self,
        *,
        user: str | None = None,
        status: str | None = "open",
        conversation_id: str | None = None,
    ) -> list[QuestionRecord]:
        """The questions put to ``user`` (default: the local owner)."""
        caller = await self._rt.kernel.caller(user)
        return await self.store.list_questions(
            status=status, user_id=caller.user_id, conversation_id=conversation_id
        )

    async def get(self, question_id: str, *, user: str | None = None) -> QuestionRecord:
        record = await self.store.get(question_id)
        caller = await self._rt.kernel.caller(user)
        if record.user_id != caller.user_id:
            raise NotFound(f"no question {question_id!r} for you; `corral questions list`")
        return record

    async def answer(
        self,
        question_id: str,
        answers: Sequence[AnswerInput],
        *,
        surface: Surface = "cli",
        note: str | None = None,
        user: str | None = None,
    ) -> QuestionRecord:
        """Answer an open question: the waiting run continues with the answers as its result.

        Each answer is text, an option's number (from 1) or, for a multi-select question, a
        list of these. Only the person the run acts for may answer, and only once.
        """
        record = await self.get(question_id, user=user)
        if record.status != "open":
            raise already_decided(await self._rt.kernel.approvals.decisions.get(question_id))
        checked = check_answers(record.questions, answers)
        answerer = await self._rt.kernel.caller(user)
        if not await self.store.mark_answered(
            question_id,
            checked,
            by=answerer.user_id,
            by_name=answerer.name,
            surface=check_surface(surface),
            note=note,
        ):
            current = await self.store.get(question_id)
            raise UsageError(
                f"question {question_id!r} is already {current.status}; it takes no answer now"
            )
        pairs = [
            {"question": q.question, "answer": a}
            for q, a in zip(record.questions, checked, strict=True)
        ]
        result = ToolResult(
            content=[
                TextBlock(render_answers(record.questions, checked, by=answerer.name, note=note))
            ],
            data={"question_id": question_id, "answers": pairs, "by": answerer.name},
        )
        card: dict[str, object] = {
            "card": "answered",
            "wait": {"kind": "question", "id": question_id},
            "by": answerer.name,
            "surface": surface,
            "answers": pairs,
            "note": note,
        }
        if is_elicitation(record.call_id):
            # No call of the run waits on it: the MCP connection reads the answer it holds.
            return await self.store.get(question_id)
        try:
            await resolve_wait(self._rt, record.run_id, record.call_id, result, card=card)
        except UsageError:
            pass  # the run ended meanwhile: the answer stays on the question's record
        return await self.store.get(question_id)
