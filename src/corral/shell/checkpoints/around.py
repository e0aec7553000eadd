"""A checkpoint around one foreground call that may write its caller's local sources.

Shared by ``execute`` (:class:`corral.shell.service.ShellService`) and MCP tools whose
server runs on a source: snapshot the writable sources before the call (only when the live
setting ``checkpoints`` is on), keep the change set after it, and always close the call's
windows (:meth:`CheckpointKeeper.release`), so their contents are not held for ever. Other
calls on the same sources run meanwhile.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.shell.checkpoints.capture import Snapshot, TooManyEntries
from corral.shell.checkpoints.keeper import CheckpointKeeper, retention_of
from corral.shell.checkpoints.rows import CallScope

__all__ = ["Around", "around", "writable_roots"]


def writable_roots(sources: SourcePolicy, caller: Caller) -> list[Path]:
    """The real roots of the local sources ``caller`` may write."""
    return [
        s.real_root
        for s in sources.sources.values()
        if s.connector == "local" and "write" in s.rights_for(caller)
    ]


def checkpoint_limit(live: Mapping[str, Any]) -> int:
    """How many entries a snapshot may scan; 0 when checkpoints are off."""
    return int(live["checkpoint_max_files"]) if live["checkpoints"] else 0


@dataclass(slots=True)
class Around:
    """The snapshots taken before a call (None: no checkpoint), and why none was kept."""

    keeper: CheckpointKeeper | None
    snapshots: list[Snapshot] | None
    unkept: str = ""

    async def keep(
        self, call_id: str | None, scope: CallScope, live: Mapping[str, Any]
    ) -> dict[str, object] | None:
        """Keep what the call changed; its summary for the result's data."""
        if not self.snapshots or self.keeper is None:
            return None
        kept = await self.keeper.after(self.snapshots, call_id, scope, retention_of(live))
        return kept.summary()


@asynccontextmanager
async def around(
    keeper: CheckpointKeeper | None,
    roots: list[Path],
    live: Mapping[str, Any],
    *,
    call_id: str | None = None,
    conversation_id: str | None = None,
) -> AsyncIterator[Around]:
    """Snapshots of ``roots`` for the length of the block (call ``call_id`` of
    ``conversation_id``), released at its end."""
    limit = checkpoint_limit(live)
    if keeper is None or limit == 0 or not roots:
        yield Around(keeper, None)
        return
    try:
        snapshots = await keeper.before(
            roots, max_entries=limit, call_id=call_id, conversation_id=conversation_id
        )
    except (OSError, TooManyEntries) as exc:
        yield Around(keeper, None, f"No checkpoint was kept for this call: {exc}.")
        return
    try:
        yield Around(keeper, snapshots)
    finally:
        keeper.release(snapshots)
