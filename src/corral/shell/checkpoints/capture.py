"""A snapshot before a call and the change set after it."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corral.shell.checkpoints.blobs import BlobStore, digest_of
from corral.shell.checkpoints.layered import Layered
from corral.shell.checkpoints.scan import Entry, Kind, entry_of, scan

RACY_NS = 100_000_000
"""File times come from a clock that ticks every few milliseconds: a file last changed
this close to a scan may be rewritten within the same tick, size unchanged, and look
untouched. Such files are compared by content instead (as git does for its index)."""


def _racy(entry: Entry, taken_ns: int) -> bool:
    return entry.kind == "file" and max(entry.mtime_ns, entry.ctime_ns) >= taken_ns - RACY_NS


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """A source as it was before a call: every entry, and each file's content as a blob.

    A value: its tables never change (the next snapshot shares them, see
    :class:`~corral.shell.checkpoints.layered.Layered`)."""

    root: Path
    entries: Mapping[str, Entry]
    digests: Mapping[str, str]
    """Blob digest by file path; a file that could not be read has none."""
    taken_ns: int

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "taken_ns": self.taken_ns,
            "entries": {path: asdict(entry) for path, entry in self.entries.items()},
            "digests": self.digests,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Snapshot:
        return cls(
            root=Path(data["root"]),
            taken_ns=int(data["taken_ns"]),
            entries={path: Entry(**entry) for path, entry in data["entries"].items()},
            digests=dict(data["digests"]),
        )


class TooManyEntries(Exception):
    """A source holds more entries than a checkpoint may cover."""


def take_snapshot(
    root: Path, blobs: BlobStore, previous: Snapshot | None = None, *, max_entries: int = 0
) -> Snapshot:
    """Scan ``root`` and keep the content of its files, reusing ``previous``'s blobs for
    files whose inode, size, mtime and ctime have not moved since it was taken.

    With ``max_entries``, a larger source raises :class:`TooManyEntries` before any copy."""
    taken = time.time_ns()
    return advance(root, blobs, previous, scan(root), None, taken, max_entries=max_entries)


def advance(
    root: Path,
    blobs: BlobStore,
    previous: Snapshot | None,
    entries: Mapping[str, Entry],
    touched: set[str] | None,
    taken_ns: int,
    *,
    max_entries: int = 0,
) -> Snapshot:
    """The snapshot of ``entries`` (scanned from ``taken_ns`` on): each file's blob reused
    from ``previous`` when its entry has not moved, kept anew otherwise. ``touched`` names
    the only paths that may differ from ``previous`` (a watched refresh); None means any.
    With ``touched``, the cost is that of the touched paths: the digests are ``previous``'s
    table with their changes over it (``previous`` is left as it is)."""
    if max_entries and len(entries) > max_entries:
        raise TooManyEntries(
            f"{root} holds {len(entries):,} entries, more than the {max_entries:,} a "
            "checkpoint covers (live setting checkpoint_max_files)"
        )
    table = Layered.of(entries)
    base = str(root)
    if previous is None or touched is None:
        digests: dict[str, str] = {}
        for path, entry in table.items():
            if entry.kind == "file" and (digest := _digest(base, blobs, previous, path, entry)):
                digests[path] = digest
        return Snapshot(root=root, entries=table, digests=Layered(digests), taken_ns=taken_ns)
    changes: dict[str, str | None] = {}
    for path in touched:
        now = table.get(path)
        digest = None
        if now is not None and now.kind == "file":
            digest = _digest(base, blobs, previous, path, now)
        changes[path] = digest
    return Snapshot(
        root=root,
        entries=table,
        digests=Layered.of(previous.digests).changed(changes),
        taken_ns=taken_ns,
    )


def _digest(
    root: str, blobs: BlobStore, previous: Snapshot | None, path: str, entry: Entry
) -> str | None:
    """The blob of file ``path``: ``previous``'s when its entry has not moved, else kept
    now; None when it cannot be read (mode 000, or gone): its content cannot be kept."""
    if previous is not None:
        old = previous.entries.get(path)
        known = previous.digests.get(path)
        if old and known and old.same(entry) and not _racy(old, previous.taken_ns):
            return known
    try:
        return blobs.put(f"{root}/{path}")
    except OSError:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Prior:
    """A path as it was before a call; ``digest`` is empty for a file that was unreadable."""

    kind: Kind
    mode: int
    digest: str = ""
    target: str = ""
    size: int = 0
    mtime_ns: int = 0
    uid: int = 0
    gid: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """What one call changed: each path's prior state, ``None`` where it did not exist."""

    priors: dict[str, Prior | None] = field(default_factory=dict)

    @property
    def files_changed(self) -> int:
        return len(self.priors)

    @property
    def prior_bytes(self) -> int:
        """Bytes of prior content the checkpoint needs kept."""
        return sum(prior.size for prior in self.priors.values() if prior is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            path: None if prior is None else asdict(prior) for path, prior in self.priors.items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            priors={path: None if prior is None else Prior(**prior) for path, prior in data.items()}
        )


def _prior(entry: Entry, digest: str) -> Prior:
    return Prior(
        kind=entry.kind,
        mode=entry.mode,
        digest=digest,
        target=entry.target,
        size=entry.size,
        mtime_ns=entry.mtime_ns,
        uid=entry.uid,
        gid=entry.gid,
    )


def _rewritten(root: Path, path: str, digest: str) -> bool:
    try:
        return digest_of(root / path) != digest
    except OSError:
        return True


def changes(before: Snapshot) -> Checkpoint:
    """Scan the source again and return the prior state of every path that moved."""
    return diff(before, scan(before.root), None)


def diff(before: Snapshot, after: Mapping[str, Entry], touched: set[str] | None) -> Checkpoint:
    """The prior state of every path that differs between ``before`` and ``after``;
    ``touched`` names the only paths that may differ (a watched refresh), None means any."""
    priors: dict[str, Prior | None] = {}
    paths = before.entries.keys() | after.keys() if touched is None else touched
    for path in paths:
        old, new = before.entries.get(path), after.get(path)
        if old is None:
            if new is not None:
                priors[path] = None
            continue
        digest = before.digests.get(path, "")
        if new is None or not old.same(new):
            priors[path] = _prior(old, digest)
        elif _racy(old, before.taken_ns) and _rewritten(before.root, path, digest):
            priors[path] = _prior(old, digest)
    return Checkpoint(priors=priors)


def priors_before_write(root: Path, path: Path, blobs: BlobStore) -> dict[str, Prior | None]:
    """The prior state of the one file a write will replace below ``root`` (its content
    kept), or of the topmost folder the write will have to make."""
    parts = path.relative_to(root).parts
    for depth in range(1, len(parts) + 1):
        relative = "/".join(parts[:depth])
        try:
            info = os.lstat(root.joinpath(*parts[:depth]))
        except FileNotFoundError:
            return {relative: None}
        if depth < len(parts):
            continue
        entry = entry_of(str(root / relative), info)
        if entry is None or entry.kind == "dir":
            return {}  # the write will refuse it
        digest = blobs.put(root / relative) if entry.kind == "file" else ""
        return {relative: _prior(entry, digest)}
    return {}
