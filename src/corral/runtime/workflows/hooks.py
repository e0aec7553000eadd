"""Webhooks of workflows: their body contracts, their keys, and how fast they may fire.

A key is issued to a person (route or CLI), shown once, and kept only as its SHA-256 hash;
the tool never issues one. A posted body is checked against the hook's contract (a JSON
Schema) and every problem is named by its JSON pointer. Each hook may start at most
``workflow_hook_rate_per_minute`` runs per minute (a sliding window per process).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound
from corral.store import workflow_tables as wt
from corral.store.tables import utcnow

__all__ = ["BodyProblem", "HookStore", "RateLimiter", "body_problems", "hash_key"]

KEY_PREFIX = "whk_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class BodyProblem:
    pointer: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message}


def body_problems(schema: dict[str, Any], body: Any, *, limit: int = 10) -> list[BodyProblem]:
    """What is wrong with ``body`` under ``schema``, each named by its JSON pointer."""
    from jsonschema import Draft202012Validator  # loads with the first webhook body

    found = []
    for error in sorted(Draft202012Validator(schema).iter_errors(body), key=lambda e: e.path):
        pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in error.path)
        message = error.message if len(error.message) <= 300 else error.message[:300] + "…"
        found.append(BodyProblem(pointer, message))
        if len(found) == limit:
            break
    return found


class RateLimiter:
    """At most ``limit`` events per ``window`` seconds per key (sliding window)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: float = 60.0) -> None:
        self._clock = clock
        self._window = window
        self._events: dict[str, deque[float]] = {}

    def allow(self, key: str, limit: int) -> bool:
        now = self._clock()
        events = self._events.setdefault(key, deque())
        while events and now - events[0] >= self._window:
            events.popleft()
        if len(events) >= limit:
            return False
        events.append(now)
        return True


def _hook_json(hook: wt.WorkflowHook, keys: list[wt.WorkflowHookKey]) -> dict[str, Any]:
    return {
        "hook_id": hook.id,
        "primary": hook.primary,
        "body_schema": hook.body_schema,
        "path": f"/hooks/{hook.workflow_id}/{hook.id}",
        "keys": [
            {
                "key_id": k.id,
                "created_at": k.created_at.isoformat(),
                "revoked": k.revoked_at is not None,
            }
            for k in keys
        ],
    }


class HookStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def sync_primary(self, workflow_id: str, webhook: dict[str, Any] | None) -> None:
        """Make the primary hook match the setup's ``webhook`` (None removes it)."""
        async with self._sessions.begin() as session:
            primary = await session.scalar(
                select(wt.WorkflowHook).where(
                    wt.WorkflowHook.workflow_id == workflow_id,
                    wt.WorkflowHook.primary.is_(True),
                    wt.WorkflowHook.removed_at.is_(None),
                )
            )
            if webhook is None:
                if primary is not None:
                    primary.removed_at = utcnow()
                return
            if primary is None:
                session.add(
                    wt.WorkflowHook(
                        id="h_" + secrets.token_hex(6),
                        workflow_id=workflow_id,
                        body_schema=webhook["body_schema"],
                        primary=True,
                    )
                )
            else:
                primary.body_schema = webhook["body_schema"]

    async def add(self, workflow_id: str, body_schema: dict[str, Any]) -> dict[str, Any]:
        hook = wt.WorkflowHook(
            id="h_" + secrets.token_hex(6),
            workflow_id=workflow_id,
            body_schema=body_schema,
            primary=False,
        )
        async with self._sessions.begin() as session:
            session.add(hook)
        return _hook_json(hook, [])

    async def list_hooks(self, workflow_id: str) -> list[dict[str, Any]]:
        async with self._sessions() as session:
            hooks = list(
                await session.scalars(
                    select(wt.WorkflowHook)
                    .where(
                        wt.WorkflowHook.workflow_id == workflow_id,
                        wt.WorkflowHook.removed_at.is_(None),
                    )
                    .order_by(wt.WorkflowHook.created_at)
                )
            )
            keys = list(
                await session.scalars(
                    select(wt.WorkflowHookKey)
                    .where(wt.WorkflowHookKey.hook_id.in_([h.id for h in hooks]))
                    .order_by(wt.WorkflowHookKey.created_at)
                )
            )
        return [_hook_json(h, [k for k in keys if k.hook_id == h.id]) for h in hooks]

    async def hook(self, workflow_id: str, hook_id: str) -> wt.WorkflowHook:
        async with self._sessions() as session:
            hook = await session.get(wt.WorkflowHook, hook_id)
        if hook is None or hook.workflow_id != workflow_id or hook.removed_at is not None:
            raise NotFound(f"workflow {workflow_id!r} has no webhook {hook_id!r}")
        return hook

    async def remove(self, workflow_id: str, hook_id: str) -> None:
        await self.hook(workflow_id, hook_id)
        async with self._sessions.begin() as session:
            await session.execute(
                update(wt.WorkflowHook)
                .where(wt.WorkflowHook.id == hook_id)
                .values(removed_at=utcnow())
            )

    async def issue_key(self, workflow_id: str, hook_id: str, *, by: str) -> dict[str, str]:
        """A new key for the hook: the only time its value is shown."""
        await self.hook(workflow_id, hook_id)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        key_id = "k_" + secrets.token_hex(6)
        async with self._sessions.begin() as session:
            session.add(
                wt.WorkflowHookKey(
                    id=key_id, hook_id=hook_id, key_hash=hash_key(key), created_by=by
                )
            )
        return {"key_id": key_id, "key": key, "hook_id": hook_id}

    async def revoke_key(self, workflow_id: str, key_id: str) -> None:
        async with self._sessions.begin() as session:
            row = await session.get(wt.WorkflowHookKey, key_id)
            hook = await session.get(wt.WorkflowHook, row.hook_id) if row is not None else None
            if row is None or hook is None or hook.workflow_id != workflow_id:
                raise NotFound(f"workflow {workflow_id!r} has no webhook key {key_id!r}")
            if row.revoked_at is None:
                row.revoked_at = utcnow()

    async def authenticate(
        self, workflow_id: str, hook_id: str, key: str
    ) -> wt.WorkflowHook | None:
        """The hook, if ``key`` is a live key of it; None for any wrong part."""
        async with self._sessions() as session:
            row = await session.scalar(
                select(wt.WorkflowHookKey).where(
                    wt.WorkflowHookKey.key_hash == hash_key(key),
                    wt.WorkflowHookKey.revoked_at.is_(None),
                )
            )
            if row is None or row.hook_id != hook_id:
                return None
            hook = await session.get(wt.WorkflowHook, hook_id)
        if hook is None or hook.workflow_id != workflow_id or hook.removed_at is not None:
            return None
        return hook
