"""Background shells in the store: one row each, finished exactly once.

Every state change is a conditional update (``WHERE status = 'running'``, ``WHERE
report_state = 'pending'``), so two processes sharing a store (the server and a CLI, or a
restarted platform) never finish the same shell twice or queue its report twice.
"""

from __future__ import annotations

import os
import secrets
import socket
import uuid
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.shell.processes import same_process, start_time
from corral.store.shell_tables import Shell
from corral.store.tables import utcnow

__all__ = ["Owner", "ShellRecord", "ShellStore", "new_shell_id"]


def new_shell_id() -> str:
    return "sh_" + secrets.token_hex(6)


@dataclass(frozen=True, slots=True)
class Owner:
    """The platform instance that runs a shell's process."""

    host: str
    pid: int
    start: int | None
    instance: str

    @classmethod
    def this_process(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), start_time(os.getpid()), uuid.uuid4().hex)

    @classmethod
    def parse(cls, text: str) -> Owner:
        host, pid, start, instance = [*text.rsplit(":", 3), "", "", "", ""][:4]
        try:
            return cls(host, int(pid), int(start) if start else None, instance)
        except ValueError:
            return cls(host, -1, None, instance)

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}:{self.start or ''}:{self.instance}"

    def process_alive(self) -> bool:
        """True when the owning process still runs on this machine (unknown elsewhere)."""
        if self.host != socket.gethostname():
            return True
        return same_process(self.pid, self.start)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellRecord:
    id: str
    status: str
    user_id: str
    conversation_id: str | None
    run_id: str | None
    agent: str
    command: str
    cwd: str
    reason: str
    plane: str
    confinement: str
    owner: str
    pid: int | None
    pid_start: int | None
    log_path: str
    started_at: datetime
    ended_at: datetime | None
    duration_s: float | None
    exit_code: int | None
    detail: str
    output_chars: int
    stop_requested_by: str | None
    report_state: str
    report: dict[str, Any] | None

    @classmethod
    def of(cls, row: Shell) -> ShellRecord:
        return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})

    @property
    def status_uri(self) -> str:
        return status_uri(self.id)

    @property
    def output_uri(self) -> str:
        return output_uri(self.id)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "run_id": self.run_id,
            "agent": self.agent,
            "command": self.command,
            "cwd": self.cwd,
            "reason": self.reason,
            "plane": self.plane,
            "confinement": self.confinement,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "duration_s": self.duration_s,
            "exit_code": self.exit_code,
            "detail": self.detail,
            "output_chars": self.output_chars,
            "report_state": self.report_state,
            "status_uri": self.status_uri,
            "output_uri": self.output_uri,
        }


def status_uri(shell_id: str) -> str:
    return f"corral://shells/{shell_id}"


def output_uri(shell_id: str) -> str:
    return f"corral://shells/{shell_id}/output"


class ShellStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def insert(self, **fields: Any) -> ShellRecord:
        async with self._sessions.begin() as session:
            row = Shell(status="running", report_state="none", **fields)
            session.add(row)
        return ShellRecord.of(row)

    async def get(self, shell_id: str) -> ShellRecord | None:
        async with self._sessions() as session:
            row = await session.get(Shell, shell_id)
            return ShellRecord.of(row) if row is not None else None

    async def find(
        self,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        status: str | None = None,
        limit: int = 200,
    ) -> list[ShellRecord]:
        query = select(Shell).order_by(Shell.started_at.desc()).limit(limit)
        if user_id is not None:
            query = query.where(Shell.user_id == user_id)
        if conversation_id is not None:
            query = query.where(Shell.conversation_id == conversation_id)
        if status is not None:
            query = query.where(Shell.status == status)
        async with self._sessions() as session:
            return [ShellRecord.of(r) for r in await session.scalars(query)]

    async def count_running(self, user_id: str) -> int:
        query = select(func.count()).where(Shell.user_id == user_id, Shell.status == "running")
        async with self._sessions() as session:
            return int(await session.scalar(query) or 0)

    async def finish(
        self,
        shell_id: str,
        *,
        status: str,
        exit_code: int | None,
        duration_s: float | None,
        detail: str,
        output_chars: int,
        report: dict[str, Any],
        report_state: str,
    ) -> bool:
        """Move a running shell to its end state; False when someone else already did."""
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(Shell)
                .where(Shell.id == shell_id, Shell.status == "running")
                .values(
                    status=status,
                    exit_code=exit_code,
                    duration_s=duration_s,
                    ended_at=utcnow(),
                    detail=detail,
                    output_chars=output_chars,
                    report=report,
                    report_state=report_state,
                )
            )
        return bool(getattr(result, "rowcount", 0))

    async def move_report(self, shell_id: str, *, from_state: str, to_state: str) -> bool:
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(Shell)
                .where(Shell.id == shell_id, Shell.report_state == from_state)
                .values(report_state=to_state)
            )
        return bool(getattr(result, "rowcount", 0))

    async def pending_reports(self) -> list[ShellRecord]:
        return await self._where(Shell.report_state == "pending")

    async def running(self) -> list[ShellRecord]:
        return await self._where(Shell.status == "running")

    async def request_stop(self, shell_id: str, by: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(Shell)
                .where(Shell.id == shell_id, Shell.status == "running")
                .values(stop_requested_by=by)
            )

    async def _where(self, condition: Any) -> list[ShellRecord]:
        async with self._sessions() as session:
            rows = await session.scalars(select(Shell).where(condition))
            return [ShellRecord.of(r) for r in rows]
