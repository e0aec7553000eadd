"""Workflows in the store: versioned setups, the runs they started, the slots they fired.

A change is a compare-and-set on the workflow's version, so two people changing a workflow
at once cannot lose either change silently: the later one is refused and asked to re-read.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound, UsageError
from corral.store import workflow_tables as wt
from corral.store.tables import as_utc, utcnow

__all__ = ["FireRecord", "WorkflowRecord", "WorkflowRunLink", "WorkflowStore"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowRecord:
    id: str
    owner_id: str
    title: str
    status: str
    version: int
    setup: dict[str, Any]
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowRunLink:
    """How a run belongs to a workflow."""

    run_id: str
    workflow_id: str
    version: int
    conversation_id: str
    trigger: str
    started_by: str
    hook_id: str | None
    slot: datetime | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class FireRecord:
    slot: datetime
    outcome: str
    run_id: str | None
    note: str


def _utc(moment: datetime | None) -> datetime | None:
    return as_utc(moment) if moment is not None else None


def _record(row: wt.Workflow, setup: dict[str, Any]) -> WorkflowRecord:
    return WorkflowRecord(
        id=row.id,
        owner_id=row.owner_id,
        title=row.title,
        status=row.status,
        version=row.version,
        setup=setup,
        next_fire_at=_utc(row.next_fire_at),
        last_fire_at=_utc(row.last_fire_at),
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
    )


def _link(row: wt.WorkflowRun) -> WorkflowRunLink:
    return WorkflowRunLink(
        run_id=row.run_id,
        workflow_id=row.workflow_id,
        version=row.version,
        conversation_id=row.conversation_id,
        trigger=row.trigger,
        started_by=row.started_by,
        hook_id=row.hook_id,
        slot=row.slot,
        created_at=row.created_at,
    )


class WorkflowStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    # -- workflows and versions ------------------------------------------------------------

    async def create(
        self,
        *,
        owner_id: str,
        setup: dict[str, Any],
        next_fire_at: datetime | None,
        anchor: datetime,
        note: str = "created",
    ) -> WorkflowRecord:
        now = utcnow()
        row = wt.Workflow(
            id="w_" + secrets.token_hex(6),
            owner_id=owner_id,
            title=setup["title"],
            status=setup["status"],
            version=1,
            next_fire_at=next_fire_at,
            last_fire_at=anchor,
            created_at=now,
            updated_at=now,
        )
        async with self._sessions.begin() as session:
            session.add(row)
            await session.flush()
            session.add(
                wt.WorkflowVersion(
                    workflow_id=row.id, version=1, setup=setup, changed_by=owner_id, note=note
                )
            )
        return _record(row, setup)

    async def change(
        self,
        current: WorkflowRecord,
        setup: dict[str, Any],
        *,
        changed_by: str,
        note: str,
        schedule_moved: tuple[datetime | None, datetime] | None,
    ) -> WorkflowRecord:
        """Write ``setup`` as the next version; ``schedule_moved`` is (next fire, anchor)."""
        values: dict[str, Any] = {
            "title": setup["title"],
            "status": setup["status"],
            "version": current.version + 1,
            "updated_at": utcnow(),
        }
        if schedule_moved is not None:
            values["next_fire_at"], values["last_fire_at"] = schedule_moved
        async with self._sessions.begin() as session:
            outcome = await session.execute(
                update(wt.Workflow)
                .where(wt.Workflow.id == current.id, wt.Workflow.version == current.version)
                .values(**values)
            )
            if int(getattr(outcome, "rowcount", 0)) != 1:
                raise UsageError(
                    f"workflow {current.id!r} changed while this change was made; read it again "
                    "(get) and send the change once more"
                )
            session.add(
                wt.WorkflowVersion(
                    workflow_id=current.id,
                    version=current.version + 1,
                    setup=setup,
                    changed_by=changed_by,
                    note=note,
                )
            )
        return await self.get(current.id)

    async def get(self, workflow_id: str) -> WorkflowRecord:
        async with self._sessions() as session:
            found = (
                await session.execute(
                    select(wt.Workflow, wt.WorkflowVersion.setup)
                    .join(
                        wt.WorkflowVersion,
                        (wt.WorkflowVersion.workflow_id == wt.Workflow.id)
                        & (wt.WorkflowVersion.version == wt.Workflow.version),
                    )
                    .where(wt.Workflow.id == workflow_id)
                )
            ).first()
        if found is None:
            raise NotFound(f"no workflow {workflow_id!r}; `list` shows the workflows")
        return _record(found[0], found[1])

    async def list_workflows(self, *, status: str | None = None) -> list[WorkflowRecord]:
        query = (
            select(wt.Workflow, wt.WorkflowVersion.setup)
            .join(
                wt.WorkflowVersion,
                (wt.WorkflowVersion.workflow_id == wt.Workflow.id)
                & (wt.WorkflowVersion.version == wt.Workflow.version),
            )
            .order_by(wt.Workflow.updated_at.desc())
        )
        if status is not None:
            query = query.where(wt.Workflow.status == status)
        else:
            query = query.where(wt.Workflow.status != "archived")
        async with self._sessions() as session:
            return [_record(row, setup) for row, setup in await session.execute(query)]

    async def versions(self, workflow_id: str) -> list[dict[str, Any]]:
        """Every version of the setup, oldest first."""
        async with self._sessions() as session:
            rows = await session.scalars(
                select(wt.WorkflowVersion)
                .where(wt.WorkflowVersion.workflow_id == workflow_id)
                .order_by(wt.WorkflowVersion.version)
            )
            return [
                {
                    "version": r.version,
                    "setup": r.setup,
                    "changed_by": r.changed_by,
                    "note": r.note,
                    "created_at": r.created_at.isoformat(),
                }
                for r in rows
            ]

    async def delete(self, workflow_id: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(delete(wt.Workflow).where(wt.Workflow.id == workflow_id))

    # -- schedule --------------------------------------------------------------------------

    async def due(self, now: datetime, *, limit: int = 100) -> list[str]:
        """Active workflows whose next slot has come, earliest first (one indexed query)."""
        async with self._sessions() as session:
            return list(
                await session.scalars(
                    select(wt.Workflow.id)
                    .where(wt.Workflow.status == "active", wt.Workflow.next_fire_at <= now)
                    .order_by(wt.Workflow.next_fire_at)
                    .limit(limit)
                )
            )

    async def claim_slot(
        self,
        workflow_id: str,
        slot: datetime,
        *,
        outcome: str,
        note: str,
        next_fire_at: datetime | None,
    ) -> bool:
        """Record ``slot`` as handled and move the schedule on; False if it was already."""
        try:
            async with self._sessions.begin() as session:
                session.add(
                    wt.WorkflowFire(workflow_id=workflow_id, slot=slot, outcome=outcome, note=note)
                )
                await session.flush()
                await session.execute(
                    update(wt.Workflow)
                    .where(wt.Workflow.id == workflow_id)
                    .values(next_fire_at=next_fire_at, last_fire_at=slot)
                )
        except IntegrityError:
            return False
        return True

    async def move_schedule(self, workflow_id: str, next_fire_at: datetime | None) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(wt.Workflow)
                .where(wt.Workflow.id == workflow_id)
                .values(next_fire_at=next_fire_at)
            )

    async def settle_fire(
        self, workflow_id: str, slot: datetime, *, outcome: str, run_id: str | None, note: str
    ) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(wt.WorkflowFire)
                .where(wt.WorkflowFire.workflow_id == workflow_id, wt.WorkflowFire.slot == slot)
                .values(outcome=outcome, run_id=run_id, note=note)
            )

    async def fires(self, workflow_id: str, *, limit: int = 10) -> list[FireRecord]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(wt.WorkflowFire)
                .where(wt.WorkflowFire.workflow_id == workflow_id)
                .order_by(wt.WorkflowFire.slot.desc())
                .limit(limit)
            )
            return [
                FireRecord(slot=as_utc(r.slot), outcome=r.outcome, run_id=r.run_id, note=r.note)
                for r in rows
            ]

    # -- runs ------------------------------------------------------------------------------

    async def link_run(self, link: WorkflowRunLink) -> None:
        async with self._sessions.begin() as session:
            session.add(
                wt.WorkflowRun(
                    run_id=link.run_id,
                    workflow_id=link.workflow_id,
                    version=link.version,
                    conversation_id=link.conversation_id,
                    trigger=link.trigger,
                    started_by=link.started_by,
                    hook_id=link.hook_id,
                    slot=link.slot,
                    created_at=link.created_at,
                )
            )

    async def run_link(self, run_id: str) -> WorkflowRunLink | None:
        async with self._sessions() as session:
            row = await session.get(wt.WorkflowRun, run_id)
        return _link(row) if row is not None else None

    async def names_of_conversation(self, conversation_id: str) -> tuple[str, ...]:
        """The id and title of the workflow whose run made ``conversation_id``; () if none."""
        async with self._sessions() as session:
            found = (
                await session.execute(
                    select(wt.Workflow.id, wt.Workflow.title)
                    .join(wt.WorkflowRun, wt.WorkflowRun.workflow_id == wt.Workflow.id)
                    .where(wt.WorkflowRun.conversation_id == conversation_id)
                    .limit(1)
                )
            ).first()
        return () if found is None else (found[0], found[1])

    async def run_links(self, workflow_id: str, *, limit: int = 20) -> list[WorkflowRunLink]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(wt.WorkflowRun)
                .where(wt.WorkflowRun.workflow_id == workflow_id)
                .order_by(wt.WorkflowRun.created_at.desc())
                .limit(limit)
            )
            return [_link(r) for r in rows]
