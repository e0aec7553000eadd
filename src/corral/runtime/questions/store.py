"""Questions in the store: a parked question is a row, holding nothing open.

Answering and closing are conditional updates from ``open``, so a question is answered at
most once, by one person, in one process, and never after its run ended.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound
from corral.kernel.decisions import DecisionStore, Surface, open_decision
from corral.runtime.questions.model import Answer, AskedQuestion, QuestionRecord
from corral.store import context_tables as ct
from corral.store.tables import utcnow

__all__ = ["QuestionStore"]


class QuestionStore:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], decisions: DecisionStore
    ) -> None:
        self._sessions = sessions
        self._decisions = decisions

    async def create(
        self,
        *,
        conversation_id: str,
        run_id: str,
        call_id: str,
        user_id: str,
        questions: Sequence[AskedQuestion],
        expires_at: datetime | None = None,
    ) -> QuestionRecord:
        row = ct.Question(
            id="q_" + secrets.token_hex(8),
            status="open",
            conversation_id=conversation_id,
            run_id=run_id,
            call_id=call_id,
            user_id=user_id,
            questions=[q.to_json() for q in questions],
            created_at=utcnow(),
        )
        async with self._sessions.begin() as session:
            session.add(row)
            open_decision(
                session,
                id=row.id,
                kind="question",
                user_id=user_id,
                conversation_id=conversation_id,
                run_id=run_id,
                call_id=call_id,
                summary="\n".join(q.question for q in questions),
                expires_at=expires_at,
            )
        return QuestionRecord.of(row)

    async def get(self, question_id: str) -> QuestionRecord:
        async with self._sessions() as session:
            row = await session.get(ct.Question, question_id)
        if row is None:
            raise NotFound(f"no question {question_id!r}; `corral questions list` shows them")
        return QuestionRecord.of(row)

    async def list_questions(
        self,
        *,
        status: str | None = "open",
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int = 200,
    ) -> list[QuestionRecord]:
        q = ct.Question
        query: Any = select(q).order_by(q.created_at).limit(limit)
        if status is not None:
            query = query.where(q.status == status)
        if user_id is not None:
            query = query.where(q.user_id == user_id)
        if conversation_id is not None:
            query = query.where(q.conversation_id == conversation_id)
        async with self._sessions() as session:
            return [QuestionRecord.of(row) for row in await session.scalars(query)]

    async def mark_answered(
        self,
        question_id: str,
        answers: Sequence[Answer],
        *,
        by: str,
        by_name: str,
        surface: Surface,
        note: str | None,
    ) -> bool:
        """Move an open question to answered, first answer only (the compare-and-set on its
        decision raises :class:`~corral.errors.AlreadyDecided` naming the earlier one);
        False when the question itself was not open any more."""
        async with self._sessions.begin() as session:
            await self._decisions.decide(
                session,
                question_id,
                {"answers": list(answers)},
                by=by,
                by_name=by_name,
                surface=surface,
                note=note,
            )
            outcome = await session.execute(
                update(ct.Question)
                .where(ct.Question.id == question_id, ct.Question.status == "open")
                .values(
                    status="answered",
                    answers=list(answers),
                    answered_by=by,
                    answered_at=utcnow(),
                    note=note,
                )
            )
        return int(getattr(outcome, "rowcount", 0)) == 1

    async def expire(self, question_id: str, note: str) -> bool:
        """Close an open question unanswered past its expiry; False when an answer came
        first."""
        return await self.close(question_id, note, status="expired")

    async def close(self, question_id: str, note: str, *, status: str = "closed") -> bool:
        """Close an open question no answer is awaited for any more, its decision ending as
        ``status`` (``closed``, ``expired``); False when an answer came first."""
        async with self._sessions.begin() as session:
            if not await self._decisions.end(session, question_id, status, note):
                return False
            await session.execute(
                update(ct.Question)
                .where(ct.Question.id == question_id, ct.Question.status == "open")
                .values(status="closed", note=note, answered_at=utcnow())
            )
        return True

    async def close_for_run(self, run_id: str, note: str) -> int:
        """Close every question a run that ended left open; returns how many."""
        async with self._sessions.begin() as session:
            outcome = await session.execute(
                update(ct.Question)
                .where(ct.Question.run_id == run_id, ct.Question.status == "open")
                .values(status="closed", note=note, answered_at=utcnow())
            )
        return int(getattr(outcome, "rowcount", 0))
