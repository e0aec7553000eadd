"""Durable approvals: a parked call waits as a row, holding nothing open.

A decision claims the row atomically: a compare-and-set on its pending decision
(:mod:`corral.kernel.decisions`) in the transaction that marks the approval, so the first
answer wins from any surface and a later one is told who decided. Deciding never runs the
call: the run's own job does (:meth:`ApprovalStore.start`), once.

A tool's secret arguments (see :mod:`corral.tools.secret_arguments`) are not in the row's
``arguments``: they are sealed with the credential key, and :meth:`ApprovalStore.arguments`
puts them back only for the call that runs once approved.
"""

from __future__ import annotations

import builtins
import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.connect.keyfile import CredentialKey
from corral.errors import NotFound, ToolError
from corral.kernel.decisions import DecisionStore, Surface, open_decision
from corral.store import tables as t
from corral.tools.dispatch import CallRequest
from corral.tools.secret_arguments import join_secrets

__all__ = ["ApprovalRecord", "ApprovalStore", "Decision"]

Decision = Literal["approve", "deny"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRecord:
    id: str
    status: str
    tool: str
    arguments: dict[str, Any]
    user_id: str
    agent: str
    profile: str
    narrowing: dict[str, Any]
    run_id: str | None
    call_id: str | None
    reason: str
    created_at: datetime
    decided_at: datetime | None
    decided_by: str | None
    note: str | None
    result: dict[str, Any] | None
    dispatched_at: datetime | None = None
    """When the run's job started the approved call."""
    conversation_id: str | None = None
    """The call's conversation (a run's, or an MCP session's, which has no run)."""
    sealed: str | None = field(default=None, repr=False)
    """The encrypted secret arguments, if the tool has any (never in :meth:`to_json`)."""

    @classmethod
    def of(cls, row: t.Approval) -> ApprovalRecord:
        return cls(
            id=row.id,
            status=row.status,
            tool=row.tool,
            arguments=row.arguments,
            user_id=row.user_id,
            agent=row.agent,
            profile=row.profile,
            narrowing=row.narrowing,
            run_id=row.run_id,
            call_id=row.call_id,
            reason=row.reason,
            created_at=row.created_at,
            decided_at=row.decided_at,
            decided_by=row.decided_by,
            note=row.note,
            result=row.result,
            dispatched_at=row.dispatched_at,
            conversation_id=row.conversation_id,
            sealed=row.sealed,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "tool": self.tool,
            "arguments": self.arguments,
            "user_id": self.user_id,
            "agent": self.agent,
            "profile": self.profile,
            "run_id": self.run_id,
            "call_id": self.call_id,
            "conversation_id": self.conversation_id,
            "reason": self.reason,
            "created_at": self.created_at.isoformat(),
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
            "decided_by": self.decided_by,
            "note": self.note,
            "result": self.result,
        }


class ApprovalStore:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        key: CredentialKey,
        decisions: DecisionStore | None = None,
    ) -> None:
        self._sessions = sessions
        self._key = key
        self.decisions = decisions or DecisionStore(sessions)

    async def park(
        self,
        request: CallRequest,
        arguments: dict[str, Any],
        reason: str,
        *,
        secrets: dict[str, Any] | None = None,
    ) -> str:
        sealed = (
            self._key.cipher().encrypt(json.dumps(secrets).encode("utf-8")).decode("ascii")
            if secrets
            else None
        )
        approval_id = "ap_" + _token()
        async with self._sessions.begin() as session:
            session.add(
                t.Approval(
                    id=approval_id,
                    status="pending",
                    tool=request.tool,
                    arguments=arguments,
                    user_id=request.caller.user_id,
                    agent=request.agent,
                    profile=request.profile,
                    narrowing=request.narrowing.to_json(),
                    run_id=request.run_id,
                    call_id=request.call_id,
                    conversation_id=request.conversation_id,
                    reason=reason,
                    sealed=sealed,
                )
            )
            open_decision(
                session,
                id=approval_id,
                kind="approval",
                user_id=request.caller.user_id,
                conversation_id=request.conversation_id,
                run_id=request.run_id,
                call_id=request.call_id,
                summary=_summary(request.tool, arguments),
            )
        return approval_id

    def arguments(self, record: ApprovalRecord) -> dict[str, Any]:
        """The arguments the approved call runs with: the record's, secrets put back."""
        if not record.sealed:
            return record.arguments
        from cryptography.fernet import InvalidToken  # loads with the first sealed approval

        try:
            opened = self._key.cipher().decrypt(record.sealed.encode("ascii"))
        except InvalidToken:
            raise ToolError(
                f"the secret arguments of approval {record.id!r} cannot be read (the credential "
                "key was rotated or replaced since it was parked); make the call again",
                code="secret_lost",
            ) from None
        return join_secrets(record.arguments, dict(json.loads(opened)))

    async def get(self, approval_id: str) -> ApprovalRecord:
        async with self._sessions() as session:
            row = await session.get(t.Approval, approval_id)
        if row is None:
            raise NotFound(f"no approval {approval_id!r}; `corral approvals list` shows them")
        return ApprovalRecord.of(row)

    async def list(
        self, *, status: str | None = "pending", user_id: str | None = None
    ) -> list[ApprovalRecord]:
        query = select(t.Approval).order_by(t.Approval.created_at)
        if status is not None:
            query = query.where(t.Approval.status == status)
        if user_id is not None:
            query = query.where(t.Approval.user_id == user_id)
        async with self._sessions() as session:
            return [ApprovalRecord.of(r) for r in await session.scalars(query)]

    async def claim(
        self,
        approval_id: str,
        decision: Decision,
        *,
        by: str,
        note: str | None,
        surface: Surface,
        by_name: str | None = None,
    ) -> ApprovalRecord:
        """Move a pending approval to approved/denied exactly once, from ``surface``;
        :class:`~corral.errors.AlreadyDecided` names the answer that came first."""
        record = await self.get(approval_id)
        if record.user_id != by:
            # Answered as an unknown id: another person's approval is not theirs to learn of.
            raise NotFound(f"no approval {approval_id!r}; `corral approvals list` shows them")
        status = "approved" if decision == "approve" else "denied"
        async with self._sessions.begin() as session:
            await self.decisions.decide(
                session,
                approval_id,
                {"decision": decision},
                by=by,
                by_name=by_name or by,
                surface=surface,
                note=note,
            )
            await session.execute(
                update(t.Approval)
                .where(t.Approval.id == approval_id)
                .values(status=status, decided_at=t.utcnow(), decided_by=by, note=note)
            )
        return await self.get(approval_id)

    async def start(self, approval_id: str) -> bool:
        """Mark the approved call started by the run's job: True once, for the one job
        that runs it (a job taking the run over later finds it started)."""
        async with self._sessions.begin() as session:
            outcome = await session.execute(
                update(t.Approval)
                .where(
                    t.Approval.id == approval_id,
                    t.Approval.status == "approved",
                    t.Approval.dispatched_at.is_(None),
                )
                .values(dispatched_at=t.utcnow())
            )
        return int(getattr(outcome, "rowcount", 0)) == 1

    async def approved_unrun(self, run_id: str) -> builtins.list[ApprovalRecord]:
        """The run's approved calls without a stored result, oldest first."""
        query = (
            select(t.Approval)
            .where(
                t.Approval.run_id == run_id,
                t.Approval.status == "approved",
                t.Approval.result.is_(None),
            )
            .order_by(t.Approval.created_at)
        )
        async with self._sessions() as session:
            return [ApprovalRecord.of(r) for r in await session.scalars(query)]

    async def expire(self, approval_id: str, note: str) -> bool:
        """End a pending approval unanswered past its expiry as a denial; False when an
        answer (from any surface) came first."""
        async with self._sessions.begin() as session:
            if not await self.decisions.end(session, approval_id, "expired", note):
                return False
            await session.execute(
                update(t.Approval)
                .where(t.Approval.id == approval_id, t.Approval.status == "pending")
                .values(status="denied", decided_at=t.utcnow(), note=note)
            )
        return True

    async def store_result(self, approval_id: str, result: dict[str, Any]) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(t.Approval).where(t.Approval.id == approval_id).values(result=result)
            )

    async def close_for_run(self, run_id: str, note: str) -> int:
        """Close every approval a finished run still had open; returns how many."""
        async with self._sessions.begin() as session:
            return await self.close_in(session, run_id, note)

    async def close_in(self, session: AsyncSession, run_id: str, note: str) -> int:
        """:meth:`close_for_run` inside the caller's transaction (the one ending the run)."""
        outcome = await session.execute(
            update(t.Approval)
            .where(t.Approval.run_id == run_id, t.Approval.status == "pending")
            .values(status="closed", decided_at=t.utcnow(), note=note)
        )
        # Every kind's decision of the run (questions, elicitations…), not only approvals.
        await self.decisions.close_for_run(session, run_id, note)
        return int(getattr(outcome, "rowcount", 0))


def _summary(tool: str, arguments: dict[str, Any]) -> str:
    """One line for the inbox: the tool and its (stored, secret-free) arguments."""
    command = arguments.get("command")
    shown = command if isinstance(command, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{tool}: {shown}"[:300]


def _token() -> str:
    return secrets.token_hex(8)
