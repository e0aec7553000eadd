"""Tables of budgets: what a run may spend and has spent, and the budgets owners set on
their conversations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["ConversationBudget", "RunBudget"]


class RunBudget(Base):
    """A run's effective limits and its spend, its children's included.

    ``charged_to`` is the nearest ancestor run with a budget: everything this run spends
    is added to that row too (and on up), under a row lock. ``exhausted`` names the limit
    the run reached, once it did."""

    __tablename__ = "run_budgets"
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    charged_to: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    limits: Mapped[dict[str, Any]] = mapped_column(JSON)
    spent: Mapped[dict[str, Any]] = mapped_column(JSON)
    exhausted: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ConversationBudget(Base):
    """The budget a conversation's owner set: each run of the conversation gets at most it.

    ``charged_to``: the run that started this conversation's work (a workflow run started
    by a run's tool call), whose budget its runs spend from like a delegate's."""

    __tablename__ = "conversation_budgets"
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    limits: Mapped[dict[str, Any]] = mapped_column(JSON)
    set_by: Mapped[str] = mapped_column(String(64))
    charged_to: Mapped[str | None] = mapped_column(String(64), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
