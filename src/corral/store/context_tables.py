"""Tables of the interaction and context tools: questions, goal state, the session ledger.

Compactions need no table: each one is a ``card`` row of its conversation (and switching
one off or on again is another card), so the overlay is rebuilt from the timeline alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["ConversationGoal", "LedgerEntry", "Question"]


class Question(Base):
    """Questions an ``ask_question`` call put to a person; the run parks until answered.

    ``status`` moves once from ``open`` to ``answered`` or ``closed`` (the run ended first),
    by a conditional update, so a question is answered at most once.
    """

    __tablename__ = "questions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(64), index=True)
    call_id: Mapped[str] = mapped_column(String(100))
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    """The person who must answer: the one the run acts for."""
    questions: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    answers: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    answered_by: Mapped[str | None] = mapped_column(String(64), nullable=True)


class ConversationGoal(Base):
    """The open goal, todo list and loop bound of one conversation, as one JSON document.

    ``revision`` grows with every change; writers compare-and-set it, so two concurrent
    ``todos`` calls never interleave half of one with half of the other.
    """

    __tablename__ = "conversation_goals"
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    revision: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LedgerEntry(Base):
    """A closed cycle: the goal and todo list as they were when it ended (sessionLedger)."""

    __tablename__ = "ledger_entries"
    __table_args__ = (UniqueConstraint("conversation_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(16))  # achieved | cleared | completed
    entry: Mapped[dict[str, Any]] = mapped_column(JSON)
    closed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
