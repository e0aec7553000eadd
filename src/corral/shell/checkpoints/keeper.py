"""Checkpoints around one call: snapshots of its writable sources, the change set kept.

A call's checkpoint is one JSON file ``<data>/checkpoints/calls/<call>.json`` naming, per
source, the prior state of each path it changed and the state the call left it in (to tell
a later change by something else); the contents live once each in
``<data>/checkpoints/blobs``. Only calls that changed something leave a file, and a row in
their conversation (:mod:`corral.shell.checkpoints.rows`) when the keeper has a store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corral.files import make_private_folder, write_text_atomically
from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import (
    Checkpoint,
    Snapshot,
    changes,
    priors_before_write,
    take_snapshot,
)
from corral.shell.checkpoints.rows import CallScope, CheckpointRows
from corral.shell.checkpoints.scan import Entry, entry_of

_CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CallCheckpoint:
    """What one call changed, in the sources it could write."""

    call_id: str
    sources: dict[str, Checkpoint]
    """By source root."""
    after: dict[str, dict[str, Entry | None]] = field(default_factory=dict)
    """By source root, each changed path as the call left it (None: it removed it)."""

    @property
    def files_changed(self) -> int:
        return sum(c.files_changed for c in self.sources.values())

    @property
    def prior_bytes(self) -> int:
        return sum(c.prior_bytes for c in self.sources.values())

    def summary(self) -> dict[str, object]:
        return {
            "id": self.call_id,
            "files_changed": self.files_changed,
            "bytes": self.prior_bytes,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """How many checkpoints each conversation keeps, and for how long."""

    count: int
    days: int
    unused_for: float = 3600.0
    """Seconds an unreferenced blob is spared after its last use (a call in flight may be
    about to reference it)."""


def retention_of(live: Mapping[str, Any]) -> Retention:
    """The retention the live settings ask for."""
    return Retention(
        count=int(live["checkpoint_keep_count"]), days=int(live["checkpoint_keep_days"])
    )


def _state(root: Path, path: str) -> Entry | None:
    full = root / path
    try:
        return entry_of(str(full), os.lstat(full))
    except FileNotFoundError:
        return None


class CheckpointKeeper:
    """Takes the snapshots and keeps the checkpoints under ``data_dir/checkpoints``.

    The last snapshot of each source stays in memory, so the next one copies only what moved
    since (the platform's own process is the only one taking snapshots)."""

    def __init__(self, data_dir: Path, rows: CheckpointRows | None = None) -> None:
        self.data_dir = data_dir
        self.folder = data_dir / "checkpoints"
        self.blobs = BlobStore(self.folder / "blobs")
        self.rows = rows
        self._last: dict[Path, Snapshot] = {}
        self._collecting = threading.Lock()
        """Held by clean-up, and by snapshots while they name blobs clean-up must spare."""

    def _snapshot(self, root: Path, max_entries: int) -> Snapshot:
        make_private_folder(self.data_dir, Path("checkpoints"))
        with self._collecting:
            previous = self._last.get(root)
            snapshot = take_snapshot(root, self.blobs, previous, max_entries=max_entries)
            self._last[root] = snapshot
        return snapshot

    async def before(self, roots: Sequence[Path], *, max_entries: int = 0) -> list[Snapshot]:
        """Snapshots of ``roots``, taken off the event loop (see :func:`take_snapshot`)."""
        return [await asyncio.to_thread(self._snapshot, root, max_entries) for root in roots]

    async def after(
        self,
        snapshots: Sequence[Snapshot],
        call_id: str | None,
        scope: CallScope | None = None,
        retention: Retention | None = None,
    ) -> CallCheckpoint:
        """The call's change set; kept on disk when it is not empty."""
        found = [await asyncio.to_thread(changes, snapshot) for snapshot in snapshots]
        return await self.keep(
            {str(s.root): c for s, c in zip(snapshots, found, strict=True)},
            call_id,
            scope,
            retention,
        )

    async def before_write(self, root: Path, path: Path) -> Checkpoint:
        """What a file tool's write of ``path`` below ``root`` will change, kept first."""

        def prior() -> Checkpoint:
            make_private_folder(self.data_dir, Path("checkpoints"))
            return Checkpoint(priors=priors_before_write(root, path, self.blobs))

        return await asyncio.to_thread(prior)

    async def keep(
        self,
        found: dict[str, Checkpoint],
        call_id: str | None,
        scope: CallScope | None = None,
        retention: Retention | None = None,
    ) -> CallCheckpoint:
        """Keep the non-empty change sets of a call, by source root, on disk; with a row
        store, add the call's row, then drop what ``retention`` no longer keeps."""
        name = call_id if call_id and _CALL_ID.fullmatch(call_id) else uuid.uuid4().hex
        sources = {root: c for root, c in found.items() if c.priors}
        after = {
            root: {path: _state(Path(root), path) for path in c.priors}
            for root, c in sources.items()
        }
        checkpoint = CallCheckpoint(call_id=name, sources=sources, after=after)
        if not sources:
            return checkpoint
        document = {
            "call_id": name,
            "sources": {root: c.to_json() for root, c in sources.items()},
            "after": {
                root: {p: None if e is None else asdict(e) for p, e in states.items()}
                for root, states in after.items()
            },
        }
        await asyncio.to_thread(
            write_text_atomically, self.folder, Path("calls") / f"{name}.json", json.dumps(document)
        )
        if self.rows is not None:
            await self.rows.add(
                name,
                scope or CallScope(),
                files_changed=checkpoint.files_changed,
                size=checkpoint.prior_bytes,
            )
            if retention is not None:
                await self.prune(retention)
        return checkpoint

    def load(self, call_id: str) -> CallCheckpoint | None:
        """A kept checkpoint, or None when the call changed nothing (or is unknown)."""
        if not _CALL_ID.fullmatch(call_id):
            return None
        path = self.folder / "calls" / f"{call_id}.json"
        if not path.is_file():
            return None
        document = json.loads(path.read_text(encoding="utf-8"))
        return CallCheckpoint(
            call_id=call_id,
            sources={
                root: Checkpoint.from_json(data) for root, data in document["sources"].items()
            },
            after={
                root: {p: None if e is None else Entry(**e) for p, e in states.items()}
                for root, states in document.get("after", {}).items()
            },
        )

    async def prune(self, retention: Retention) -> list[str]:
        """Drop the checkpoints ``retention`` no longer keeps (rows and files), then the
        blobs nothing references any more; returns the dropped call ids."""
        if self.rows is None:
            return []
        dropped = await self.rows.expired(keep_count=retention.count, keep_days=retention.days)
        if not dropped:
            return []
        await asyncio.to_thread(self._forget, dropped, retention.unused_for)
        await self.rows.drop(dropped)
        return dropped

    async def drop(self, call_ids: Sequence[str]) -> None:
        """Forget the checkpoints of ``call_ids`` (rows and change sets), as after a rewind
        that consumed them; their blobs go at the next clean-up."""
        await asyncio.to_thread(self._forget, call_ids, None)
        if self.rows is not None:
            await self.rows.drop(call_ids)

    def _forget(self, call_ids: Sequence[str], unused_for: float | None) -> None:
        for call_id in call_ids:
            if _CALL_ID.fullmatch(call_id):
                with contextlib.suppress(FileNotFoundError):
                    (self.folder / "calls" / f"{call_id}.json").unlink()
        if unused_for is not None:
            self.collect(unused_for=unused_for)

    def collect(self, *, unused_for: float) -> int:
        """Remove blobs no kept checkpoint and no in-memory snapshot references."""
        with self._collecting:
            referenced = {d for snap in self._last.values() for d in snap.digests.values()}
            calls = self.folder / "calls"
            for path in calls.glob("*.json") if calls.is_dir() else ():
                with contextlib.suppress(FileNotFoundError):
                    document = json.loads(path.read_text(encoding="utf-8"))
                    for priors in document["sources"].values():
                        referenced.update(
                            p["digest"] for p in priors.values() if p and p.get("digest")
                        )
            return (
                self.blobs.collect(referenced, unused_for=unused_for)
                if self.blobs.root.is_dir()
                else 0
            )
