"""Rewinding a conversation's files to how they were before one of its steps.

The steps are the conversation's checkpoint rows (1 is the first call that changed files).
Rewinding to step k undoes steps k, k+1, … in one restore. Before touching anything, each
path those steps changed is compared with the state the conversation's last step left it
in: a difference means something else (another conversation, a person) changed it since,
and the rewind is refused unless forced. So is a folder the rewind would remove that now
holds entries the steps did not make, and a path an undone step changed while a call that
is not undone also ran on the same source (both change sets hold it: whose change it was
cannot be told, :mod:`corral.shell.checkpoints.overlaps`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from corral.errors import NotFound, PolicyDenied, UsageError
from corral.shell.checkpoints.capture import Checkpoint, Prior
from corral.shell.checkpoints.keeper import CallCheckpoint, CheckpointKeeper
from corral.shell.checkpoints.preview import PathChange, path_changes
from corral.shell.checkpoints.restore import restore
from corral.shell.checkpoints.rows import StoredCheckpoint
from corral.shell.checkpoints.scan import Entry, entry_of, scan
from corral.shell.checkpoints.settled import SettledStates

__all__ = [
    "Conflict",
    "RewindOutcome",
    "check_writable",
    "find_conflicts",
    "load_calls",
    "preview_files",
    "restore_calls",
    "rewind_files",
    "step_index",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    root: str
    path: str
    reason: str

    def describe(self) -> str:
        return f"{os.path.join(self.root, self.path)}: {self.reason}"

    def to_json(self) -> dict[str, str]:
        return {"root": self.root, "path": self.path, "reason": self.reason}


@dataclass(slots=True, kw_only=True)
class RewindOutcome:
    to_step: int
    undone: list[StoredCheckpoint]
    conflicts: list[Conflict] = field(default_factory=list)
    refused: bool = False
    """Whether the conflicts stopped it (nothing was touched then)."""
    restored: int = 0
    """Paths put back (0 when refused)."""
    unrestored: list[str] = field(default_factory=list)
    """Paths that could not be given back (unreadable when their checkpoint was taken)."""


def step_index(steps: list[StoredCheckpoint], to: str) -> int | None:
    """The index in ``steps`` of the step named by number or by checkpoint id, if any."""
    for index, stored in enumerate(steps):
        if to in (str(stored.step), stored.call_id):
            return index
    return None


def _step(steps: list[StoredCheckpoint], to: str) -> int:
    found = step_index(steps, to)
    if found is not None:
        return found
    raise UsageError(
        f"no step {to!r} among this conversation's checkpoints: give a step from 1 to "
        f"{len(steps)} or a checkpoint id"
    )


def _current(root: str, path: str) -> Entry | None:
    full = os.path.join(root, path)
    try:
        return entry_of(full, os.lstat(full))
    except FileNotFoundError:
        return None


def _said(entry: Entry | None) -> str:
    return "absent" if entry is None else f"a {entry.kind}"


Settled = list[tuple[frozenset[str], dict[str, dict[str, Entry | None]]]]
"""Per earlier rewind, newest first: the steps it kept and the states it left paths in."""


def _left(root: str, calls: list[CallCheckpoint], settled: Settled) -> dict[str, Entry | None]:
    """Each path as the last of ``calls`` touching it left it, or as a later rewind did."""
    left: dict[str, Entry | None] = {}
    last: dict[str, str] = {}
    for call in calls:
        for path, entry in call.after.get(root, {}).items():
            left[path], last[path] = entry, call.call_id
    for path, call_id in last.items():
        for kept, states in settled:
            if call_id in kept and path in states.get(root, {}):
                left[path] = states[root][path]
                break
    return left


def _conflicts(root: str, calls: list[CallCheckpoint], settled: Settled) -> list[Conflict]:
    left = _left(root, calls, settled)
    earliest: dict[str, Prior | None] = {}
    for call in calls:
        for path, prior in call.sources.get(root, Checkpoint()).priors.items():
            earliest.setdefault(path, prior)
    found: list[Conflict] = []
    for path, expected in sorted(left.items()):
        now = _current(root, path)
        if expected is None and now is None:
            continue
        if expected is None or now is None or not expected.same(now):
            found.append(
                Conflict(
                    root=root,
                    path=path,
                    reason=f"changed since ({_said(expected)} then, {_said(now)} now)",
                )
            )
    for path, prior in sorted(earliest.items()):
        now = _current(root, path)
        if now is None or now.kind != "dir" or (prior is not None and prior.kind == "dir"):
            continue
        foreign = sorted(
            f"{path}/{inner}" for inner in scan(Path(root) / path) if f"{path}/{inner}" not in left
        )
        found.extend(
            Conflict(root=root, path=inner, reason="made since, in a folder the rewind removes")
            for inner in foreign
        )
    return found


def _roots(calls: list[CallCheckpoint]) -> list[str]:
    return sorted({root for call in calls for root in call.sources})


def _overlapping(keeper: CheckpointKeeper, calls: list[CallCheckpoint]) -> list[Conflict]:
    """The paths each of ``calls`` shares with a call that overlapped it on the same source
    and is not undone with it; every path of the call while that one still runs."""
    undone = {call.call_id for call in calls}
    running = keeper.open_calls()
    found: dict[tuple[str, str], Conflict] = {}
    for call in calls:
        for root, others in keeper.overlaps.read(call.call_id).items():
            mine = call.sources.get(root)
            if mine is None:
                continue
            for other_id, conversation in sorted(others.items()):
                if other_id in undone:
                    continue
                who = f"{other_id} (conversation {conversation})" if conversation else other_id
                if other_id in running:
                    shared = set(mine.priors)
                    reason = f"changed while call {who} also ran on this source, still running"
                else:
                    try:
                        other = keeper.load(other_id)
                    except ValueError:
                        other = None  # a torn change set: its paths cannot be told
                    if other is None or root not in other.sources:
                        continue  # nothing kept of it (changed nothing, or rewound since)
                    shared = set(mine.priors) & set(other.sources[root].priors)
                    reason = f"changed while call {who} also ran on this source"
                for path in sorted(shared):
                    found.setdefault((root, path), Conflict(root=root, path=path, reason=reason))
    return [found[key] for key in sorted(found)]


def find_conflicts(
    keeper: CheckpointKeeper, conversation_id: str, calls: list[CallCheckpoint]
) -> list[Conflict]:
    """Paths something else changed since the last of ``calls``, or while one of them ran
    (blocking; reads only)."""
    settled = SettledStates(keeper.data_dir).expected(conversation_id)
    since = [c for root in _roots(calls) for c in _conflicts(root, calls, settled)]
    return since + _overlapping(keeper, calls)


def preview_files(keeper: CheckpointKeeper, calls: list[CallCheckpoint]) -> list[PathChange]:
    """What undoing ``calls`` (oldest first) would change, path by path (blocking)."""
    return [
        change
        for root in _roots(calls)
        for change in path_changes(
            Path(root), keeper.blobs, [c.sources[root] for c in calls if root in c.sources]
        )
    ]


def restore_calls(
    keeper: CheckpointKeeper,
    conversation_id: str,
    calls: list[CallCheckpoint],
    kept: list[str],
) -> tuple[int, list[str]]:
    """Undo ``calls`` (oldest first), the steps ``kept`` staying; the paths put back, and
    those that could not be (blocking)."""
    restored, unrestored = 0, []
    states: dict[str, dict[str, Entry | None]] = {}
    for root in _roots(calls):
        mine: list[Checkpoint] = [c.sources[root] for c in calls if root in c.sources]
        paths = {path for checkpoint in mine for path in checkpoint.priors}
        restored += len(paths)
        unrestored += restore(Path(root), keeper.blobs, mine)
        states[root] = {path: _current(root, path) for path in paths}
    SettledStates(keeper.data_dir).record(conversation_id, kept, states)
    return restored, unrestored


async def load_calls(
    keeper: CheckpointKeeper, undone: list[StoredCheckpoint]
) -> list[CallCheckpoint]:
    """The change sets of the ``undone`` steps (NotFound when one is gone)."""
    calls: list[CallCheckpoint] = []
    for stored in undone:
        call = await asyncio.to_thread(keeper.load, stored.call_id)
        if call is None:
            raise NotFound(f"the change set of step {stored.step} ({stored.call_id}) is gone")
        calls.append(call)
    return calls


def check_writable(calls: list[CallCheckpoint], writable: Collection[str]) -> None:
    """PolicyDenied unless every source the calls changed is in ``writable`` (real roots)."""
    closed = sorted(set(_roots(calls)) - set(writable))
    if closed:
        raise PolicyDenied(f"rewinding needs write access to {', '.join(closed)}")


def _rewind(
    keeper: CheckpointKeeper,
    conversation_id: str,
    calls: list[CallCheckpoint],
    kept: list[str],
    force: bool,
) -> tuple[list[Conflict], int, list[str]]:
    conflicts = find_conflicts(keeper, conversation_id, calls)
    if conflicts and not force:
        return conflicts, 0, []
    restored, unrestored = restore_calls(keeper, conversation_id, calls, kept)
    return conflicts, restored, unrestored


async def rewind_files(
    keeper: CheckpointKeeper,
    conversation_id: str,
    to: str,
    *,
    writable: Collection[str],
    force: bool = False,
) -> RewindOutcome:
    """Put the conversation's files back as they were before step ``to`` (a step number or
    a checkpoint id), in the sources named in ``writable`` (real roots) only.

    Refused with the conflicts listed when something else changed them since, unless
    ``force``. The undone steps' checkpoints are dropped once their files are back."""
    if keeper.rows is None:
        raise NotFound("checkpoints are not kept here")
    steps = await keeper.rows.for_conversation(conversation_id)
    if not steps:
        raise NotFound(f"conversation {conversation_id} has no checkpoints to rewind to")
    first = _step(steps, to)
    undone = steps[first:]
    calls = await load_calls(keeper, undone)
    check_writable(calls, writable)
    kept = [stored.call_id for stored in steps[:first]]
    conflicts, restored, unrestored = await asyncio.to_thread(
        _rewind, keeper, conversation_id, calls, kept, force
    )
    outcome = RewindOutcome(
        to_step=undone[0].step,
        undone=undone,
        conflicts=conflicts,
        refused=bool(conflicts) and not force,
        restored=restored,
        unrestored=unrestored,
    )
    if not outcome.refused:
        await keeper.drop([stored.call_id for stored in undone])
    return outcome
