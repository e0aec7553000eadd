"""Queued deliveries: background reports and inbox messages waiting for their conversation.

A delivery is stored the moment it arrives and becomes a timeline row only when the
conversation is free (no turn in flight, no approval open). Nothing is dropped: a
delivery that has to wait rides in on whichever turn starts next.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.runtime.timeline import NewRow
from corral.store import runtime_tables as rt
from corral.store.tables import utcnow

__all__ = ["DeliveryKind", "DeliveryRecord", "DeliveryStore", "take_queued"]

DeliveryKind = Literal["report", "message"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryRecord:
    id: str
    conversation_id: str
    kind: DeliveryKind
    status: str
    user_id: str
    source: str
    source_id: str
    title: str
    text: str
    data: dict[str, Any]
    hop: int
    created_at: datetime
    delivered_seq: int | None

    @classmethod
    def of(cls, row: rt.Delivery) -> DeliveryRecord:
        return cls(
            id=row.id,
            conversation_id=row.conversation_id,
            kind=row.kind,  # type: ignore[arg-type]  # only DeliveryKind values are stored
            status=row.status,
            user_id=row.user_id,
            source=row.source,
            source_id=row.source_id,
            title=row.title,
            text=row.text,
            data=row.data,
            hop=row.hop,
            created_at=row.created_at,
            delivered_seq=row.delivered_seq,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "kind": self.kind,
            "status": self.status,
            "user_id": self.user_id,
            "source": self.source,
            "source_id": self.source_id,
            "title": self.title,
            "hop": self.hop,
            "created_at": self.created_at.isoformat(),
            "delivered_seq": self.delivered_seq,
        }

    def as_row(self) -> NewRow:
        """The timeline row this delivery becomes."""
        if self.kind == "report":
            return NewRow(
                kind="background_report",
                user_id=self.user_id,
                data={
                    "source": self.source,
                    "source_id": self.source_id,
                    "title": self.title,
                    "text": self.text,
                    "data": self.data,
                    "delivery_id": self.id,
                },
            )
        return NewRow(
            kind="message",
            user_id=self.user_id,
            data={
                "text": self.text,
                "sender": self.data.get("sender", {}),
                "hop": self.hop,
                "delivery_id": self.id,
            },
        )


async def take_queued(
    session: AsyncSession, conversation_id: str, *, user_id: str | None = None
) -> list[DeliveryRecord]:
    """The queued deliveries that continue the conversation as one person, oldest first.

    That person is ``user_id`` when given (the one starting the turn), else whoever the
    oldest delivery names. Deliveries for another person wait for the next turn, so each
    turn runs as exactly one person whose rights apply to all of it.
    """
    rows = list(
        await session.scalars(
            select(rt.Delivery)
            .where(rt.Delivery.conversation_id == conversation_id, rt.Delivery.status == "queued")
            .order_by(rt.Delivery.created_at, rt.Delivery.id)
        )
    )
    if not rows:
        return []
    user = user_id if user_id is not None else rows[0].user_id
    return [DeliveryRecord.of(r) for r in rows if r.user_id == user]


async def mark_delivered(
    session: AsyncSession, deliveries: Sequence[DeliveryRecord], seqs: Sequence[int]
) -> None:
    now = utcnow()
    for delivery, seq in zip(deliveries, seqs, strict=True):
        await session.execute(
            update(rt.Delivery)
            .where(rt.Delivery.id == delivery.id)
            .values(status="delivered", delivered_at=now, delivered_seq=seq)
        )


class DeliveryStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def queue(
        self,
        *,
        conversation_id: str,
        kind: DeliveryKind,
        user_id: str,
        source: str,
        source_id: str,
        title: str,
        text: str,
        data: dict[str, Any],
        hop: int = 0,
    ) -> DeliveryRecord:
        row = rt.Delivery(
            id=("rp_" if kind == "report" else "msg_") + secrets.token_hex(8),
            conversation_id=conversation_id,
            kind=kind,
            status="queued",
            user_id=user_id,
            source=source,
            source_id=source_id,
            title=title,
            text=text,
            data=data,
            hop=hop,
            created_at=utcnow(),
        )
        async with self._sessions.begin() as session:
            session.add(row)
        return DeliveryRecord.of(row)

    async def list_deliveries(
        self, conversation_id: str, *, status: str | None = None
    ) -> list[DeliveryRecord]:
        query = (
            select(rt.Delivery)
            .where(rt.Delivery.conversation_id == conversation_id)
            .order_by(rt.Delivery.created_at)
        )
        if status is not None:
            query = query.where(rt.Delivery.status == status)
        async with self._sessions() as session:
            return [DeliveryRecord.of(r) for r in await session.scalars(query)]

    async def count_undelivered(self, conversation_id: str, kind: DeliveryKind) -> int:
        async with self._sessions() as session:
            count = await session.scalar(
                select(func.count())
                .select_from(rt.Delivery)
                .where(
                    rt.Delivery.conversation_id == conversation_id,
                    rt.Delivery.kind == kind,
                    rt.Delivery.status == "queued",
                )
            )
        return int(count or 0)

    async def last_queued_at(self, conversation_id: str, kind: DeliveryKind) -> datetime | None:
        async with self._sessions() as session:
            latest = await session.scalar(
                select(rt.Delivery)
                .where(rt.Delivery.conversation_id == conversation_id, rt.Delivery.kind == kind)
                .order_by(rt.Delivery.created_at.desc())
                .limit(1)
            )
        return latest.created_at if latest is not None else None

    async def conversations_with_queued(self) -> list[str]:
        async with self._sessions() as session:
            found = await session.scalars(
                select(rt.Delivery.conversation_id).where(rt.Delivery.status == "queued").distinct()
            )
            return list(found)
