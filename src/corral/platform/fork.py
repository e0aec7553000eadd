"""Forking a conversation at one of its calls: a new conversation with the history the model
had seen before that call and, on request, the files as they were then in a new folder.

Nothing is run again. The history is copied (:mod:`corral.runtime.forks`); the files are a
copy of each source the conversation changed, with the checkpoints of the calls from the
fork point on restored onto the copy (:mod:`corral.shell.checkpoints.fork_files`), so the
original conversation and its files are left as they are. The person asking needs to read
the conversation and its sources, and to write where the files go."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.errors import PolicyDenied, UsageError
from corral.kernel import Kernel
from corral.policy.sources import SourcePolicy
from corral.runtime.conversations import ConversationInfo
from corral.runtime.forks import copy_history, cut_before, history_before
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import TimelineRow
from corral.shell.checkpoints.capture import Checkpoint
from corral.shell.checkpoints.fork_files import FilesCopy, copy_as_before
from corral.shell.checkpoints.keeper import CallCheckpoint, CheckpointKeeper
from corral.shell.service import ShellService

__all__ = ["ForkOutcome", "fork_conversation"]


@dataclass(slots=True, kw_only=True)
class ForkedFiles:
    source: str
    """The source whose files these are."""
    uri: str
    """Where they went."""
    copy: FilesCopy
    steps_undone: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "folder": self.uri,
            "steps_undone": self.steps_undone,
            "paths_restored": self.copy.restored,
            "uncopied": self.copy.uncopied,
            "unrestored": self.copy.unrestored,
        }


@dataclass(slots=True, kw_only=True)
class ForkOutcome:
    conversation: ConversationInfo
    """The new conversation."""
    forked_from: str
    at: str
    """The call the fork goes back before."""
    rows: int
    """Rows of history it starts with."""
    files: list[ForkedFiles] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation.to_json(),
            "forked_from": self.forked_from,
            "at": self.at,
            "rows": self.rows,
            "files": [f.to_json() for f in self.files],
        }


async def _call_id(
    keeper: CheckpointKeeper | None, conversation_id: str, rows: list[TimelineRow], at: str
) -> str:
    """``at`` as a call id: a call of the conversation, or a checkpoint step's number."""
    if any(r.kind == "tool_call" and r.call_id == at for r in rows):
        return at
    if at.isdigit() and keeper is not None and keeper.rows is not None:
        for stored in await keeper.rows.for_conversation(conversation_id):
            if str(stored.step) == at:
                return stored.call_id
    raise UsageError(
        f"no step {at!r} in conversation {conversation_id}: give a call id from its timeline "
        "or a checkpoint step number (`corral rewind CONVERSATION` lists them)"
    )


async def _going_back(
    keeper: CheckpointKeeper, conversation_id: str, later: set[str]
) -> tuple[list[CallCheckpoint], list[int], set[str]]:
    """The change sets of the calls from the fork point on (oldest first), their step
    numbers, and every source root the conversation's kept checkpoints name."""
    steps = [] if keeper.rows is None else await keeper.rows.for_conversation(conversation_id)
    calls: list[tuple[int, CallCheckpoint]] = []
    for stored in steps:
        call = await asyncio.to_thread(keeper.load, stored.call_id)
        if call is not None:
            calls.append((stored.step, call))
    roots = {root for _, call in calls for root in call.sources}
    first = next((i for i, (_, call) in enumerate(calls) if call.call_id in later), len(calls))
    back = calls[first:]
    return [call for _, call in back], [step for step, _ in back], roots


def _readable_source(policy: SourcePolicy, root: str, caller: Any) -> str:
    for source in policy.sources.values():
        if str(source.real_root) == root:
            if "read" not in source.rights_for(caller):
                raise PolicyDenied(f"forking its files needs read access to source {source.name!r}")
            return source.name
    raise PolicyDenied(f"the files were in {root}, which no registered source covers any more")


async def _fork_files(
    kernel: Kernel,
    keeper: CheckpointKeeper,
    conversation_id: str,
    later: set[str],
    files_into: str,
    caller: Any,
) -> list[ForkedFiles]:
    calls, steps, roots = await _going_back(keeper, conversation_id, later)
    if not roots:
        raise UsageError(
            f"conversation {conversation_id} keeps no checkpoints of changed files, so there "
            "are no files to fork; leave out the folder for the files"
        )
    policy = (await kernel.config.dispatch_state()).sources
    names = {root: _readable_source(policy, root, caller) for root in sorted(roots)}
    target = policy.check(caller, files_into, "write")
    folders = {root: target.path for root in names}
    if len(names) > 1:
        folders = {root: target.path / name for root, name in names.items()}
        if target.path.exists():
            raise UsageError(f"{files_into} exists already: name a new folder for the files")
        await asyncio.to_thread(target.path.mkdir)
    forked = []
    for root, name in names.items():
        mine: list[Checkpoint] = [c.sources[root] for c in calls if root in c.sources]
        copy = await asyncio.to_thread(
            copy_as_before, Path(root), folders[root], keeper.blobs, mine
        )
        undone = [s for s, c in zip(steps, calls, strict=True) if root in c.sources]
        uri = target.source.uri_for(folders[root]) if target.source else str(folders[root])
        forked.append(ForkedFiles(source=name, uri=uri, copy=copy, steps_undone=undone))
    return forked


async def fork_conversation(
    kernel: Kernel,
    runtime: Runtime,
    conversation_id: str,
    at: str,
    *,
    user: str | None = None,
    files_into: str | None = None,
) -> ForkOutcome:
    """See :meth:`corral.platform.core.Platform.fork`."""
    caller = await kernel.caller(user)
    original = await runtime.conversation(conversation_id, user=caller.user_id)
    rows = await runtime.conversations.rows(conversation_id)
    shells = kernel.services.get(ShellService)
    keeper = shells.checkpoints if shells is not None else None
    call_id = await _call_id(keeper, conversation_id, rows, at.strip())
    cut = cut_before(rows, call_id)
    kept = history_before(rows, cut)
    files: list[ForkedFiles] = []
    if files_into is not None:
        if not files_into.strip():
            raise UsageError(
                "the folder for the files is empty: name a new folder, or leave it out"
            )
        if keeper is None:
            raise UsageError("shell execution is not installed here, so no files were kept")
        later = {r.call_id for r in rows if r.kind == "tool_call" and r.seq >= cut and r.call_id}
        files = await _fork_files(kernel, keeper, conversation_id, later, files_into, caller)
    title = f"Fork of {original.title or original.id}"
    forked = await runtime.conversations.create(
        owner_id=caller.user_id,
        agent=original.agent,
        profile=original.profile,
        model=original.model,
        title=title,
    )
    origin = {
        "from_conversation": conversation_id,
        "at": call_id,
        "files": [f.uri for f in files],
    }
    await copy_history(kernel.sessions, forked.id, kept, origin)
    return ForkOutcome(
        conversation=await runtime.conversations.get(forked.id),
        forked_from=conversation_id,
        at=call_id,
        rows=len(kept),
        files=files,
    )
