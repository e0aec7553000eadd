"""Tables of skills: the session tickets of runs.

A ticket is a short-lived bearer token a run's shell commands receive (``CORRAL_TICKET``),
so a skill's scripts can call the API as the run's user. Only its SHA-256 is stored; the
row is deleted when the run ends and is dead after ``expires_at`` in any case.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["RunTicket"]


class RunTicket(Base):
    __tablename__ = "run_tickets"
    token_hash: Mapped[str] = mapped_column(String(128), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(64))
    conversation_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
