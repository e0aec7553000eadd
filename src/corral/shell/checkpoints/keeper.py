"""Checkpoints around one call: snapshots of its writable sources, the change set kept.

A call's checkpoint is one JSON file ``<data>/checkpoints/calls/<call>.json`` naming, per
source, the prior state of each path it changed; the contents live once each in
``<data>/checkpoints/blobs``. Only calls that changed something leave a file.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corral.files import make_private_folder, write_text_atomically
from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import (
    Checkpoint,
    Snapshot,
    changes,
    priors_before_write,
    take_snapshot,
)

_CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CallCheckpoint:
    """What one call changed, in the sources it could write."""

    call_id: str
    sources: dict[str, Checkpoint]
    """By source root."""

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


class CheckpointKeeper:
    """Takes the snapshots and keeps the checkpoints under ``data_dir/checkpoints``.

    The last snapshot of each source stays in memory, so the next one copies only what moved
    since (the platform's own process is the only one taking snapshots)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.folder = data_dir / "checkpoints"
        self.blobs = BlobStore(self.folder / "blobs")
        self._last: dict[Path, Snapshot] = {}

    def _snapshot(self, root: Path, max_entries: int) -> Snapshot:
        make_private_folder(self.data_dir, Path("checkpoints"))
        previous = self._last.get(root)
        snapshot = take_snapshot(root, self.blobs, previous, max_entries=max_entries)
        self._last[root] = snapshot
        return snapshot

    async def before(self, roots: Sequence[Path], *, max_entries: int = 0) -> list[Snapshot]:
        """Snapshots of ``roots``, taken off the event loop (see :func:`take_snapshot`)."""
        return [await asyncio.to_thread(self._snapshot, root, max_entries) for root in roots]

    async def after(self, snapshots: Sequence[Snapshot], call_id: str | None) -> CallCheckpoint:
        """The call's change set; kept on disk when it is not empty."""
        found = [await asyncio.to_thread(changes, snapshot) for snapshot in snapshots]
        return await self.keep(
            {str(s.root): c for s, c in zip(snapshots, found, strict=True)}, call_id
        )

    async def before_write(self, root: Path, path: Path) -> Checkpoint:
        """What a file tool's write of ``path`` below ``root`` will change, kept first."""

        def prior() -> Checkpoint:
            make_private_folder(self.data_dir, Path("checkpoints"))
            return Checkpoint(priors=priors_before_write(root, path, self.blobs))

        return await asyncio.to_thread(prior)

    async def keep(self, found: dict[str, Checkpoint], call_id: str | None) -> CallCheckpoint:
        """Keep the non-empty change sets of a call, by source root, on disk."""
        name = call_id if call_id and _CALL_ID.fullmatch(call_id) else uuid.uuid4().hex
        checkpoint = CallCheckpoint(
            call_id=name, sources={root: c for root, c in found.items() if c.priors}
        )
        if checkpoint.sources:
            document = {
                "call_id": name,
                "sources": {root: c.to_json() for root, c in checkpoint.sources.items()},
            }
            await asyncio.to_thread(
                write_text_atomically,
                self.folder,
                Path("calls") / f"{name}.json",
                json.dumps(document),
            )
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
        )
