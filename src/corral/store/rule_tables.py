"""Tables of permission rules: the command prefixes people chose to remember when they
answered an approval (rule files live in ``<data_dir>/rules/``, not here)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["RememberedRule"]


class RememberedRule(Base):
    """A prefix rule remembered from an approval.

    ``scope`` is ``agent`` (this user's calls through ``agent``), ``user`` (all of
    ``user_id``'s agents) or ``project`` (everyone; admins only). ``pattern`` is the JSON list
    of words a rule file would hold."""

    __tablename__ = "remembered_rules"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    scope: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    agent: Mapped[str | None] = mapped_column(String(100), nullable=True)
    pattern: Mapped[list[Any]] = mapped_column(JSON)
    decision: Mapped[str] = mapped_column(String(16))
    justification: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(64))
    approval_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
