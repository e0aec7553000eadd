"""Questions as asked and answered: parsing the tool's arguments, checking answers, and the
text the model reads when the answers come back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from corral.errors import UsageError
from corral.runtime.questions.elicitation import check_elicited, padded
from corral.store import context_tables as ct

__all__ = [
    "Answer",
    "AnswerInput",
    "AskedQuestion",
    "QuestionRecord",
    "check_answers",
    "describe_questions",
    "render_answers",
]

Answer = str | list[str]
"""One question's answer: a text, or the picked options of a multi-select question."""

AnswerInput = str | int | Sequence[str | int]
"""What a person may give: text, an option's number (from 1), or a list of these."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AskedQuestion:
    question: str
    options: tuple[str, ...] = ()
    multi_select: bool = False
    schema: Mapping[str, Any] | None = None
    """What an answer must be, for a question an MCP server asked (see
    :mod:`corral.runtime.questions.elicitation`); None for ``ask_question``'s."""

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AskedQuestion:
        schema = raw.get("schema")
        return cls(
            question=str(raw["question"]).strip(),
            options=tuple(str(o).strip() for o in raw.get("options") or ()),
            multi_select=bool(raw.get("multi_select", False)),
            schema=dict(schema) if isinstance(schema, Mapping) else None,
        )

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "question": self.question,
            "options": list(self.options),
            "multi_select": self.multi_select,
        }
        if self.schema is not None:
            shown["schema"] = dict(self.schema)
        return shown


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionRecord:
    """A stored ``ask_question`` call: what was asked, of whom, and the answers."""

    id: str
    status: str
    """open, answered or closed (the run ended before an answer came)."""
    conversation_id: str
    run_id: str
    call_id: str
    user_id: str
    questions: tuple[AskedQuestion, ...]
    answers: tuple[Answer, ...] | None
    note: str | None
    created_at: datetime
    answered_at: datetime | None
    answered_by: str | None

    @classmethod
    def of(cls, row: ct.Question) -> QuestionRecord:
        return cls(
            id=row.id,
            status=row.status,
            conversation_id=row.conversation_id,
            run_id=row.run_id,
            call_id=row.call_id,
            user_id=row.user_id,
            questions=tuple(AskedQuestion.from_json(q) for q in row.questions),
            answers=tuple(row.answers) if row.answers is not None else None,
            note=row.note,
            created_at=row.created_at,
            answered_at=row.answered_at,
            answered_by=row.answered_by,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "conversation_id": self.conversation_id,
            "run_id": self.run_id,
            "call_id": self.call_id,
            "user_id": self.user_id,
            "questions": [q.to_json() for q in self.questions],
            "answers": list(self.answers) if self.answers is not None else None,
            "note": self.note,
            "created_at": self.created_at.isoformat(),
            "answered_at": self.answered_at.isoformat() if self.answered_at else None,
            "answered_by": self.answered_by,
        }


def _choice(question: AskedQuestion, value: str | int, number: int) -> str:
    if isinstance(value, bool):
        raise UsageError(f"answer {number}: {value!r} is neither text nor an option number")
    if isinstance(value, int):
        if not question.options:
            raise UsageError(f"answer {number}: question {number} has no options to pick by number")
        if not 1 <= value <= len(question.options):
            raise UsageError(
                f"answer {number}: option {value} does not exist; pick 1 to "
                f"{len(question.options)} or answer in words"
            )
        return question.options[value - 1]
    text = str(value).strip()
    if text.isdigit() and question.options and text not in question.options:
        return _choice(question, int(text), number)  # a bare number picks an option
    if not text:
        raise UsageError(f"answer {number} is empty; answer in words or pick an option")
    return text


def check_answers(questions: Sequence[AskedQuestion], given: Sequence[AnswerInput]) -> list[Answer]:
    """One answer per question; option numbers become the option's text.

    A person may always answer in their own words; a multi-select question takes a list
    (or one value), any other question exactly one value. An MCP server's questions are
    also checked against the schema it asked with.
    """
    schemas = [q.schema for q in questions]
    elicited = bool(questions) and questions[0].schema is not None
    if elicited:
        given = padded(schemas, given)
    if len(given) != len(questions):
        raise UsageError(
            f"{len(questions)} question(s) were asked but {len(given)} answer(s) given; "
            "answer each question, in order"
        )
    answers: list[Answer] = []
    for number, (question, value) in enumerate(zip(questions, given, strict=True), start=1):
        if isinstance(value, str | int):
            picked = [_choice(question, value, number)]
        else:
            picked = [_choice(question, item, number) for item in value]
        if question.multi_select:
            if not picked:
                raise UsageError(f"answer {number} picks nothing; pick at least one option")
            answers.append(list(dict.fromkeys(picked)))
        elif len(picked) != 1:
            raise UsageError(f"question {number} takes one answer, not {len(picked)}")
        else:
            answers.append(picked[0])
    if elicited:
        check_elicited(schemas, answers)
    return answers


def describe_questions(questions: Sequence[AskedQuestion]) -> str:
    """The questions in one short text, for the waiting card."""
    lines = []
    for number, q in enumerate(questions, start=1):
        options = ""
        if q.options:
            joiner = " / " if not q.multi_select else ", "
            options = f" [{joiner.join(q.options)}]" + (" (several)" if q.multi_select else "")
        lines.append(f"{number}. {q.question}{options}")
    return "\n".join(lines)


def render_answers(
    questions: Sequence[AskedQuestion], answers: Sequence[Answer], *, by: str, note: str | None
) -> str:
    """What the model reads as the ``ask_question`` result."""
    lines = [f"{by} answered:"]
    for number, (q, answer) in enumerate(zip(questions, answers, strict=True), start=1):
        shown = ", ".join(answer) if isinstance(answer, list) else answer
        lines.append(f"{number}. {q.question}\n   → {shown}")
    if note:
        lines.append(f"Note from {by}: {note}")
    return "\n".join(lines)
