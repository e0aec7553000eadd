"""The local trace store: the spans of recent runs, kept in a bounded table so that
``corral trace RUN`` and the web UI's Trace tab show them without any collector."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base

__all__ = ["TraceSpan"]


class TraceSpan(Base):
    """One ended span. Times are Unix nanoseconds as the SDK gives them; rows older than
    the live setting ``trace_keep_days`` are deleted in the store's background pass."""

    __tablename__ = "trace_spans"
    trace_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    span_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    name: Mapped[str] = mapped_column(String(300))
    kind: Mapped[str] = mapped_column(String(16))
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(8))
    """``ok``, ``error`` or ``unset``."""
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    events: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    """Each ``{"name", "at_ns", "attributes"}``."""

    __table_args__ = (Index("ix_trace_spans_start_ns", "start_ns"),)
