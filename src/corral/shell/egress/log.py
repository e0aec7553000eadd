"""What the egress proxy saw: one record per connection, kept per call and stored.

:class:`ConnectionLog` is one connection's record; the proxy opens it with the host's
decision and counts bytes, and the TLS interception side fills method and path (and the
later decision) through :meth:`ConnectionLog.note_request`. :class:`EgressLog` holds a
call's records, says which were refused for the tool result, and writes them to the
``egress_connections`` table: once at a call's end (:meth:`EgressStore.save`), or as the
connections happen for a long-lived helper (:meth:`EgressStore.sync`, batched).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.shell.egress.policy import HostDecision
from corral.store.shell_tables import EgressConnection

__all__ = ["CallScope", "ConnectionLog", "EgressLog", "EgressStore"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallScope:
    """Which call the connections belong to."""

    conversation_id: str | None = None
    run_id: str | None = None
    call_id: str | None = None
    agent: str = ""


@dataclass(slots=True, kw_only=True)
class ConnectionLog:
    protocol: str
    host: str
    port: int
    allowed: bool
    rule: str
    reason: str
    method: str | None = None
    path: str | None = None
    bytes_up: int = 0
    bytes_down: int = 0
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)
    duration: float = 0.0
    ended: bool = False
    row_id: int | None = None
    """Its row once stored by :meth:`EgressStore.sync`."""
    stored: tuple[object, ...] | None = None
    """What :meth:`EgressStore.sync` stored last (:meth:`state`)."""

    def decide(self, decision: HostDecision) -> None:
        self.allowed, self.rule, self.reason = decision.allowed, decision.rule, decision.reason

    def note_request(self, method: str, path: str, decision: HostDecision) -> None:
        """A request seen on this connection; a refused one marks the connection refused."""
        self.method, self.path = method, path
        if not decision.allowed or self.allowed:
            self.decide(decision)

    def close(self) -> None:
        self.duration = time.monotonic() - self.started
        self.ended = True

    def state(self) -> tuple[object, ...]:
        """What a stored row holds that may still change."""
        return (self.allowed, self.rule, self.reason, self.method, self.path, self.bytes_up,
                self.bytes_down, self.duration)  # fmt: skip

    def row(self, scope: CallScope) -> dict[str, Any]:
        return {
            "conversation_id": scope.conversation_id,
            "run_id": scope.run_id,
            "call_id": scope.call_id,
            "agent": scope.agent,
            "protocol": self.protocol,
            "host": self.host[:255],
            "port": self.port,
            "method": self.method,
            "path": self.path,
            "allowed": self.allowed,
            "rule": self.rule,
            "reason": self.reason,
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
            "started_at": self.started_at,
            "duration_s": self.duration,
        }

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"host": self.host, "port": self.port, "rule": self.rule}
        if self.method:
            out["request"] = f"{self.method} {self.path}"
        out["reason"] = self.reason
        return out


@dataclass(slots=True)
class EgressLog:
    scope: CallScope
    records: list[ConnectionLog] = field(default_factory=list)
    limit: int = 1_000
    dropped: int = 0

    def open(self, protocol: str, host: str, port: int, decision: HostDecision) -> ConnectionLog:
        record = ConnectionLog(
            protocol=protocol,
            host=host,
            port=port,
            allowed=decision.allowed,
            rule=decision.rule,
            reason=decision.reason,
        )
        if len(self.records) < self.limit:
            self.records.append(record)
        else:
            self.dropped += 1
        return record

    def refused(self) -> list[dict[str, Any]]:
        return [r.summary() for r in self.records if not r.allowed]

    def counts(self) -> dict[str, int]:
        allowed = sum(1 for r in self.records if r.allowed)
        return {"allowed": allowed, "refused": len(self.records) - allowed}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredConnection:
    started_at: datetime
    run_id: str | None
    protocol: str
    host: str
    port: int
    method: str | None
    path: str | None
    allowed: bool
    rule: str
    reason: str
    bytes_up: int
    bytes_down: int


class EgressStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def save(self, log: EgressLog) -> None:
        """Store a finished call's connections."""
        if not log.records:
            return
        async with self._sessions.begin() as session:
            for record in log.records:
                session.add(EgressConnection(**record.row(log.scope)))

    async def sync(self, log: EgressLog) -> None:
        """Store what changed since the last sync (a long-lived helper's log): new
        connections are added, changed ones updated; ended (or refused) ones, once stored,
        leave ``log.records``, so its limit bounds only what is not stored yet."""
        changed = [r for r in log.records if r.state() != r.stored]
        if changed:
            async with self._sessions.begin() as session:
                for record in changed:
                    state = record.state()
                    if record.row_id is None:
                        row = EgressConnection(**record.row(log.scope))
                        session.add(row)
                        await session.flush()
                        record.row_id = row.id
                    else:
                        await session.execute(
                            update(EgressConnection)
                            .where(EgressConnection.id == record.row_id)
                            .values(**record.row(log.scope))
                        )
                    record.stored = state
        log.records = [
            r for r in log.records if not ((r.ended or not r.allowed) and r.stored == r.state())
        ]

    async def for_conversation(
        self, conversation_id: str | None, *, limit: int = 500
    ) -> Sequence[StoredConnection]:
        query = select(EgressConnection).order_by(EgressConnection.id.desc()).limit(limit)
        if conversation_id is not None:
            query = query.where(EgressConnection.conversation_id == conversation_id)
        async with self._sessions() as session:
            rows = list(await session.scalars(query))
        return [
            StoredConnection(
                started_at=r.started_at,
                run_id=r.run_id,
                protocol=r.protocol,
                host=r.host,
                port=r.port,
                method=r.method,
                path=r.path,
                allowed=r.allowed,
                rule=r.rule,
                reason=r.reason,
                bytes_up=r.bytes_up,
                bytes_down=r.bytes_down,
            )
            for r in reversed(rows)
        ]
