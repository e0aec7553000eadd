"""Webhook deliveries that carry an ``Idempotency-Key``: a repeat starts no second run.

A delivery claims its key by inserting a row keyed by (hook, key hash) before any run starts;
the store's primary key decides between two concurrent deliveries, in one process or many, and
the row outlives a restart. Within the live window ``workflow_hook_idempotency_hours`` a repeat
with the same body is answered with the first run's id, as Stripe and the IETF
idempotency-key draft do, so a sender retrying after a lost answer learns what happened
instead of starting the work twice; a repeat with another body is refused, since the key
was meant for the first. Keys are compared after stripping outer whitespace and folding case,
so ``" Abc "`` cannot pass for a new key beside ``"abc"``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store import workflow_tables as wt

__all__ = ["Claim", "HookDeliveries", "body_hash", "normalised_key"]

KEY_MAX = 255
ABANDONED = timedelta(minutes=5)
"""A claim still without a run after this was left by a process that died mid-delivery."""
_VISIBLE = re.compile(r"[\x21-\x7e]+")


def normalised_key(values: list[str]) -> str:
    """The key a delivery sent (its ``Idempotency-Key`` headers), or ValueError saying why not."""
    if len(values) > 1:
        raise ValueError("send one Idempotency-Key header, not several")
    key = values[0].strip()
    if not key or len(key) > KEY_MAX or not _VISIBLE.fullmatch(key):
        raise ValueError(
            f"Idempotency-Key must be 1 to {KEY_MAX} visible ASCII characters without spaces "
            "(a UUID is a good choice)"
        )
    return key.casefold()


def body_hash(body: Any) -> str:
    """SHA-256 of ``body`` as canonical JSON: the same document however it was spaced."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """What claiming a key found: ``won`` (start the run) or the earlier delivery."""

    won: bool
    run_id: str | None = None
    same_body: bool = True


class HookDeliveries:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def claim(
        self, hook_id: str, key: str, body: str, *, now: datetime, window: timedelta
    ) -> Claim:
        """Claim ``key`` for this delivery, or say which delivery already holds it."""
        key_hash = hashlib.sha256(key.encode()).hexdigest()
        try:
            async with self._sessions.begin() as session:
                # A key past the window is forgotten, so it may be claimed afresh; so is a
                # claim whose process died before its run started (it would answer 409 all day).
                await session.execute(
                    delete(wt.WorkflowHookDelivery).where(
                        wt.WorkflowHookDelivery.hook_id == hook_id,
                        or_(
                            wt.WorkflowHookDelivery.created_at < now - window,
                            and_(
                                wt.WorkflowHookDelivery.run_id.is_(None),
                                wt.WorkflowHookDelivery.created_at < now - ABANDONED,
                            ),
                        ),
                    )
                )
                session.add(
                    wt.WorkflowHookDelivery(
                        hook_id=hook_id, key_hash=key_hash, body_hash=body, created_at=now
                    )
                )
                await session.flush()
        except IntegrityError:
            async with self._sessions() as session:
                held = await session.scalar(
                    select(wt.WorkflowHookDelivery).where(
                        wt.WorkflowHookDelivery.hook_id == hook_id,
                        wt.WorkflowHookDelivery.key_hash == key_hash,
                    )
                )
            if held is None:  # released between our insert and this read: the sender may retry
                return Claim(won=False, run_id=None)
            return Claim(won=False, run_id=held.run_id, same_body=held.body_hash == body)
        return Claim(won=True)

    async def started(self, hook_id: str, key: str, run_id: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                update(wt.WorkflowHookDelivery)
                .where(
                    wt.WorkflowHookDelivery.hook_id == hook_id,
                    wt.WorkflowHookDelivery.key_hash == hashlib.sha256(key.encode()).hexdigest(),
                )
                .values(run_id=run_id)
            )

    async def release(self, hook_id: str, key: str) -> None:
        """Forget a claim whose delivery started nothing, so the sender may retry with it."""
        async with self._sessions.begin() as session:
            await session.execute(
                delete(wt.WorkflowHookDelivery).where(
                    wt.WorkflowHookDelivery.hook_id == hook_id,
                    wt.WorkflowHookDelivery.key_hash == hashlib.sha256(key.encode()).hexdigest(),
                    wt.WorkflowHookDelivery.run_id.is_(None),
                )
            )
