"""Tables of delegate runs: which child conversation belongs to which parent call.

A delegate child runs in a conversation of its own (its transcript never enters the
parent's prompt); the ``delegations`` row ties it to the parent conversation, run and call.
``delivered`` flips once, by a conditional update, from false to true when the child's
answer reaches the parent call, so the answer is given exactly once whichever side (the
waiting handler or the child's end) gets there first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["Delegation"]


class Delegation(Base):
    __tablename__ = "delegations"
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    """The child's own conversation."""
    parent_conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    parent_run_id: Mapped[str] = mapped_column(String(64), index=True)
    parent_call_id: Mapped[str] = mapped_column(String(100))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    task: Mapped[str] = mapped_column(Text)
    background: Mapped[bool] = mapped_column(Boolean, default=False)
    parent_waits: Mapped[bool] = mapped_column(Boolean, default=False)
    delivered: Mapped[bool] = mapped_column(Boolean, default=False)
    reach: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """The tools answer: survivors and dropped names with their reasons."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
