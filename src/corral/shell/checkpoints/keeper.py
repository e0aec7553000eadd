"""Checkpoints around one call: snapshots of its writable sources, the change set kept.

A call's checkpoint is one line of ``<data>/checkpoints/calls/log``
(:mod:`corral.shell.checkpoints.change_log`; older ones are a JSON file each beside it)
naming, per source, the prior state of each path it changed and the state the call left it
in (to tell a later change by something else); the contents live once each in
``<data>/checkpoints/blobs``. Only calls that changed something leave one, and a row in
their conversation (:mod:`corral.shell.checkpoints.rows`) when the keeper has a store.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.files import make_private_folder
from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import (
    Checkpoint,
    Prior,
    Snapshot,
    TooManyEntries,
    advance,
    changes,
    diff,
    priors_before_write,
)
from corral.shell.checkpoints.change_log import ChangeLog
from corral.shell.checkpoints.overlaps import Overlaps
from corral.shell.checkpoints.rows import CallScope, CheckpointRows
from corral.shell.checkpoints.scan import Entry, entry_of, scan
from corral.shell.checkpoints.watch import SourceWatch, Unwatchable

_CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
INLINE_PATHS = 64
"""A change set of at most this many paths is recorded on the event loop. Measured for 10
paths: 0.11 ms there, 0.18 ms through a worker thread (the hop alone 0.05 ms, more on a
loaded machine)."""
PRUNE_EVERY = 60.0
"""Seconds between two retention passes after kept checkpoints, unless a conversation is
known to be over its count (the periodic sweep passes too)."""
COLLECT_EVERY = 60.0
"""Seconds between two clean-ups of unneeded contents after retention dropped checkpoints."""


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


def _state(root: str, path: str) -> Entry | None:
    full = os.path.join(root, path)
    try:
        return entry_of(full, os.lstat(full))
    except FileNotFoundError:
        return None


def _fields(value: Entry | Prior | None) -> dict[str, object] | None:
    """``asdict`` for these flat records, without its deep copies (most of the cost of
    recording a change set)."""
    if value is None:
        return None
    return {name: getattr(value, name) for name in value.__slots__}


@dataclass(eq=False, slots=True)
class _Window:
    """An open call's view of one source: the snapshot taken at its start, and the paths
    that may have moved since (every refresh of the source adds what it drained)."""

    before: Snapshot
    call_id: str
    conversation_id: str
    touched: set[str] | None = field(default_factory=set)
    """None: anything may have moved (a full scan came between)."""
    overlapped: dict[str, str] = field(default_factory=dict)
    """The other calls open on the source meanwhile: id -> conversation ("" for none)."""


@dataclass(slots=True)
class _Source:
    """A source's watch, its last snapshot (the state the last scan found), and the windows
    of the calls open on it."""

    watch: SourceWatch
    last: Snapshot | None = None
    watched: bool = True
    """False once the source could not be watched: it is then scanned whole each time."""
    windows: list[_Window] = field(default_factory=list)


@contextlib.contextmanager
def _forgotten_on_failure(source: _Source) -> Iterator[None]:
    """The watch's events are consumed by a refresh: when what they told is not recorded
    (too many entries, an unreadable source), the next snapshot must scan whole, and every
    open window must be compared whole."""
    try:
        yield
    except BaseException:
        source.watch.close()
        source.last = None
        for window in source.windows:
            window.touched = None
        raise


def _own(snapshot: Snapshot) -> Snapshot:
    """A snapshot object of a window's own (the tables shared, not copied): two calls may
    start from the same state, and each is told apart by the object it was handed."""
    return Snapshot(
        root=snapshot.root,
        entries=snapshot.entries,
        digests=snapshot.digests,
        taken_ns=snapshot.taken_ns,
    )


class CheckpointKeeper:
    """Takes the snapshots and keeps the checkpoints under ``data_dir/checkpoints``.

    The last snapshot of each source stays in memory with an inotify watch on the source
    (:mod:`corral.shell.checkpoints.watch`), so the next snapshot looks again only at what
    moved since, and reuses the last one whole when nothing did (the platform's own process
    is the only one taking snapshots). Calls on the same source may run at the same time:
    each holds a window from its snapshot (:meth:`before`) to its change set
    (:meth:`after`), every refresh of the source adds the paths it drained to every open
    window, and a call's change set compares its own snapshot with the source now over its
    own window's paths only. A path changed while two calls were open is in both change
    sets; each records the calls it overlapped (:mod:`corral.shell.checkpoints.overlaps`)."""

    def __init__(self, data_dir: Path, rows: CheckpointRows | None = None) -> None:
        self.data_dir = data_dir
        self.folder = data_dir / "checkpoints"
        self.blobs = BlobStore(self.folder / "blobs")
        self.rows = rows
        self.overlaps = Overlaps(self.folder)
        self._sources: dict[Path, _Source] = {}
        self._open: dict[int, tuple[_Source, _Window]] = {}
        """By ``id`` of the snapshot handed out: the windows not released yet (their
        snapshots' contents are spared by clean-up)."""
        self._collecting = threading.Lock()
        """Held by clean-up, and by snapshots and change sets while they refresh a source
        and name blobs clean-up must spare (short: never for a call's run)."""
        self._guard = threading.Lock()
        """Held briefly around every change to the windows (taken after ``_collecting``)."""
        self.calls = ChangeLog(self.folder / "calls")
        self._counts: dict[str | None, int] = {}
        """Checkpoint rows of each conversation, as far as this keeper knows (an
        overestimate after drops, which only brings a retention pass earlier)."""
        self.clock: Callable[[], float] = time.monotonic
        """Seconds, for the spacing of retention passes and clean-ups."""
        self._pruned_at = -math.inf
        self._collected_at = -math.inf

    @property
    def _last(self) -> dict[Path, Snapshot]:
        last = {root: s.last for root, s in self._sources.items() if s.last is not None}
        with self._guard:
            windows = [window.before for _, window in self._open.values()]
        return {**{Path(f"open:{i}"): s for i, s in enumerate(windows)}, **last}

    def _scanned(self, source: _Source) -> tuple[Mapping[str, Entry], set[str] | None]:
        """The source's entries now, and the paths that may have moved since its last
        snapshot (None: any); both are added to every window open on the source."""
        entries, touched = self._refreshed(source)
        with self._guard:
            for window in source.windows:
                if touched is None or window.touched is None:
                    window.touched = None
                else:
                    window.touched |= touched
        return entries, touched

    def _refreshed(self, source: _Source) -> tuple[Mapping[str, Entry], set[str] | None]:
        if source.watched:
            try:
                if source.last is None:
                    return source.watch.scan(), None
                return source.watch.refresh(source.last.entries)
            except Unwatchable:
                source.watched = False
        return scan(source.watch.root), None

    def _snapshot(
        self, root: Path, max_entries: int, call_id: str, conversation_id: str
    ) -> Snapshot:
        """The source's state now, as the snapshot of a new window of call ``call_id``."""
        make_private_folder(self.data_dir, Path("checkpoints"))
        with self._collecting:
            source = self._sources.setdefault(root, _Source(watch=SourceWatch(root)))
            previous = source.last
            taken = time.time_ns()
            with _forgotten_on_failure(source):
                snapshot = self._next(source, previous, taken, max_entries)
            source.last = snapshot
            window = _Window(
                before=_own(snapshot), call_id=call_id, conversation_id=conversation_id
            )
            with self._guard:
                for other in source.windows:
                    other.overlapped[call_id] = conversation_id
                    window.overlapped[other.call_id] = other.conversation_id
                source.windows.append(window)
                self._open[id(window.before)] = (source, window)
        return window.before

    def _next(
        self, source: _Source, previous: Snapshot | None, taken: int, max_entries: int
    ) -> Snapshot:
        root = source.watch.root
        entries, touched = self._scanned(source)
        if previous is not None and touched is not None and not touched:
            if max_entries and len(previous.entries) > max_entries:
                raise TooManyEntries(
                    f"{root} holds {len(previous.entries):,} entries, more than the "
                    f"{max_entries:,} a checkpoint covers (live setting "
                    "checkpoint_max_files)"
                )
            return previous  # no event since: the source is as the last scan left it
        return advance(root, self.blobs, previous, entries, touched, taken, max_entries=max_entries)

    def _changes(self, before: Snapshot) -> tuple[Checkpoint, dict[str, str]]:
        """What moved since ``before`` (a window's snapshot), over the window's paths only,
        and the calls the window overlapped; the window takes no more paths. The state
        found becomes the source's last snapshot (the moved files' content kept now), so
        the next snapshot starts from it."""
        with self._collecting:
            with self._guard:
                opened = self._open.get(id(before))
            if (
                opened is None
                or opened[1] not in opened[0].windows
                or (self._sources.get(before.root) is not opened[0])
            ):
                return changes(before), {}  # not an open window of this keeper: scan whole
            source, window = opened
            taken = time.time_ns()
            with _forgotten_on_failure(source):
                entries, touched = self._scanned(source)
                found = diff(before, entries, window.touched)
                source.last = advance(before.root, self.blobs, source.last, entries, touched, taken)
            with self._guard:
                source.windows.remove(window)
                overlapped = dict(window.overlapped)
        return found, overlapped

    async def before(
        self,
        roots: Sequence[Path],
        *,
        max_entries: int = 0,
        call_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[Snapshot]:
        """Snapshots of ``roots``, taken off the event loop, each opening a window of call
        ``call_id`` on its source; :meth:`release` them when the call is done (a background
        shell's stay open until :meth:`ended`, their contents spared by clean-up). Other
        calls on the same sources go on meanwhile."""
        name = call_id if call_id and _CALL_ID.fullmatch(call_id) else uuid.uuid4().hex
        snapshots: list[Snapshot] = []
        try:
            for root in roots:
                snapshots.append(
                    await asyncio.to_thread(
                        self._snapshot, root, max_entries, name, conversation_id or ""
                    )
                )
        except BaseException:
            self.release(snapshots)
            raise
        return snapshots

    async def ended(
        self,
        snapshots: Sequence[Snapshot],
        call_id: str | None,
        scope: CallScope | None = None,
        retention: Retention | None = None,
    ) -> CallCheckpoint:
        """A background shell's change set, from its start to its end."""
        try:
            return await self.after(snapshots, call_id, scope, retention)
        finally:
            self.release(snapshots)

    def release(self, snapshots: Sequence[Snapshot], *, ran: bool = True) -> None:
        """Close the windows of these snapshots (when :meth:`after` did not) and let
        clean-up have their contents; ``ran`` False for a call that never started (the
        other calls then forget they overlapped it)."""
        with self._guard:
            for snapshot in snapshots:
                source, window = self._open.pop(id(snapshot), (None, None))
                if source is None or window is None:
                    continue
                if window in source.windows:
                    source.windows.remove(window)
                if not ran:
                    for other in source.windows:
                        other.overlapped.pop(window.call_id, None)

    def overlapping(self, root: Path, call_id: str, conversation_id: str) -> dict[str, str]:
        """The calls open on ``root`` now (id -> conversation), each told that call
        ``call_id`` writes there meanwhile: a file tool's write, which opens no window of
        its own, is in their change sets too."""
        found: dict[str, str] = {}
        with self._guard:
            source = self._sources.get(root)
            for window in source.windows if source is not None else ():
                if window.call_id != call_id:
                    window.overlapped[call_id] = conversation_id
                    found[window.call_id] = window.conversation_id
        return found

    def open_calls(self) -> set[str]:
        """The calls with a window open on some source (running now)."""
        with self._guard:
            return {window.call_id for _, window in self._open.values()}

    async def flush(self) -> None:
        """Wait until the rows of the checkpoints kept so far are written."""
        if self.rows is not None:
            await self.rows.flush()

    def close(self) -> None:
        """Stop watching the sources (:meth:`flush` first, for the rows)."""
        for source in self._sources.values():
            source.watch.close()
        self._sources.clear()
        self.blobs.close()
        self.calls.close()

    async def after(
        self,
        snapshots: Sequence[Snapshot],
        call_id: str | None,
        scope: CallScope | None = None,
        retention: Retention | None = None,
    ) -> CallCheckpoint:
        """The call's change set; kept on disk when it is not empty, with the calls it
        overlapped on each source."""
        found = [await asyncio.to_thread(self._changes, snapshot) for snapshot in snapshots]
        name = call_id if call_id and _CALL_ID.fullmatch(call_id) else self._name(snapshots)
        name = name or uuid.uuid4().hex
        overlapped = {
            str(s.root): calls
            for s, (c, calls) in zip(snapshots, found, strict=True)
            if c.priors and calls
        }
        if overlapped:
            # First: a crash before the change set is kept leaves an unused record, never a
            # change set that does not say whom it overlapped.
            await asyncio.to_thread(self.overlaps.record, name, overlapped)
        return await self.keep(
            {str(s.root): c for s, (c, _) in zip(snapshots, found, strict=True)},
            name,
            scope,
            retention,
        )

    def _name(self, snapshots: Sequence[Snapshot]) -> str | None:
        """The call id the windows of ``snapshots`` were opened under (made up when the
        call had none), so overlaps name the change set kept."""
        with self._guard:
            for snapshot in snapshots:
                _, window = self._open.get(id(snapshot), (None, None))
                if window is not None:
                    return window.call_id
        return None

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
        store, queue the call's row (:meth:`CheckpointRows.queue`), then drop what
        ``retention`` no longer keeps (when a conversation is over its count, else at most
        every :data:`PRUNE_EVERY` seconds)."""
        name = call_id if call_id and _CALL_ID.fullmatch(call_id) else uuid.uuid4().hex
        sources = {root: c for root, c in found.items() if c.priors}
        if not sources:
            return CallCheckpoint(call_id=name, sources=sources)
        if sum(len(c.priors) for c in sources.values()) <= INLINE_PATHS:
            checkpoint = self._record(name, sources)
        else:
            checkpoint = await asyncio.to_thread(self._record, name, sources)
        if self.rows is not None:
            scope = scope or CallScope()
            # written behind the call (about 1 ms of inserts and thread hops otherwise);
            # every read of the rows in this process waits for it
            self.rows.queue(
                name,
                scope,
                files_changed=checkpoint.files_changed,
                size=checkpoint.prior_bytes,
            )
            if retention is not None and await self._prune_due(scope, retention):
                await self.prune(retention)
        return checkpoint

    def _record(self, name: str, sources: dict[str, Checkpoint]) -> CallCheckpoint:
        """The call's change set with the state it left each path in, appended to the log
        (not synced, as the contents it names are not: an fsync cost 10 to 20 ms per call
        on the busy disk measured, more than the rest of the checkpoint)."""
        after = {
            root: {path: _state(root, path) for path in c.priors} for root, c in sources.items()
        }
        document = {
            "call_id": name,
            "sources": {
                root: {p: _fields(prior) for p, prior in c.priors.items()}
                for root, c in sources.items()
            },
            "after": {
                root: {p: _fields(e) for p, e in states.items()} for root, states in after.items()
            },
        }
        self.calls.append(name, document)
        return CallCheckpoint(call_id=name, sources=sources, after=after)

    async def _prune_due(self, scope: CallScope, retention: Retention) -> bool:
        """Whether a retention pass is due after a row added for ``scope``."""
        assert self.rows is not None
        conversation = scope.conversation_id
        if conversation not in self._counts:
            self._counts[conversation] = await self.rows.count(conversation)
        else:
            self._counts[conversation] += 1
        if self._counts[conversation] > retention.count:
            return True
        return self.clock() - self._pruned_at >= PRUNE_EVERY

    def load(self, call_id: str) -> CallCheckpoint | None:
        """A kept checkpoint, or None when the call changed nothing (or is unknown)."""
        if not _CALL_ID.fullmatch(call_id):
            return None
        document = self.calls.get(call_id)
        if document is None:
            return None
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
        self._pruned_at = self.clock()
        dropped = await self.rows.expired(keep_count=retention.count, keep_days=retention.days)
        self._counts = {c: min(n, retention.count) for c, n in self._counts.items()}
        if not dropped:
            return []
        collect = self._pruned_at - self._collected_at >= COLLECT_EVERY
        if collect:
            self._collected_at = self._pruned_at
        await asyncio.to_thread(self._forget, dropped, retention.unused_for if collect else None)
        await self.rows.drop(dropped)
        return dropped

    async def drop(self, call_ids: Sequence[str]) -> None:
        """Forget the checkpoints of ``call_ids`` (rows and change sets), as after a rewind
        that consumed them; their blobs go at the next clean-up."""
        await asyncio.to_thread(self._forget, call_ids, None)
        if self.rows is not None:
            await self.rows.drop(call_ids)

    def _forget(self, call_ids: Sequence[str], unused_for: float | None) -> None:
        names = [c for c in call_ids if _CALL_ID.fullmatch(c)]
        self.calls.forget(names)
        for call_id in names:
            self.overlaps.forget(call_id)
        if unused_for is not None:
            self.collect(unused_for=unused_for)

    def collect(self, *, unused_for: float) -> int:
        """Remove blobs no kept checkpoint and no in-memory snapshot references (and
        rewrite the change-set log when it is mostly forgotten change sets)."""
        with self._collecting:
            referenced = {d for snap in self._last.values() for d in snap.digests.values()}
            for document in self.calls.documents():
                for priors in document["sources"].values():
                    referenced.update(p["digest"] for p in priors.values() if p and p.get("digest"))
            self.calls.compact()
            return (
                self.blobs.collect(referenced, unused_for=unused_for)
                if self.blobs.root.is_dir()
                else 0
            )
