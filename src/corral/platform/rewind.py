"""Rewinding a conversation: its files, its history the model sees, or both.

``to`` names where to go back to: a step (the number ``corral rewind CONVERSATION`` lists,
1 being the first call that changed files), a checkpoint id, or the id of any tool call of
the conversation. Going back to a call means the state before it: the files every call
from it on changed are put back (:mod:`corral.shell.checkpoints.rewind`), and the model
turn that made it is hidden from the model with everything after it
(:mod:`corral.runtime.rewinds`), the rows staying in the timeline shown as rewound.

A rewind is refused while a run of the conversation is running or parked, when something
else changed the files since (listed, unless forced), and for files in sources the person
asking may not write.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from corral.errors import ConversationBusy, UsageError
from corral.runtime.chat import busy_message
from corral.runtime.conversations import (
    ConversationInfo,
    claim_conversation,
    release_conversation,
)
from corral.runtime.rewinds import CARD, HiddenRow, holder_for, rewind_span
from corral.runtime.timeline import NewRow, TimelineRow
from corral.shell.checkpoints.keeper import CallCheckpoint, CheckpointKeeper
from corral.shell.checkpoints.preview import PathChange
from corral.shell.checkpoints.rewind import (
    Conflict,
    check_writable,
    find_conflicts,
    load_calls,
    preview_files,
    restore_calls,
    step_index,
)
from corral.shell.checkpoints.rows import StoredCheckpoint

if TYPE_CHECKING:
    from corral.kernel import Kernel
    from corral.policy.identity import Caller
    from corral.runtime.runtime import Runtime

__all__ = ["ConversationRewind", "RewindOutline", "RewindPreview", "RewindResult", "Rewinds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationRewind:
    """The conversation part: the rows hidden from the model (``from_seq`` to
    ``through_seq``), kept in the timeline as rewound."""

    call_id: str
    from_seq: int
    """The model turn that made the call."""
    through_seq: int
    """The conversation's last row when the rewind was (or would be) made."""
    rows: list[HiddenRow]
    """The rows the model no longer gets (cards are never part of its prompt)."""
    marker_seq: int | None = None
    """The rewind card's sequence number, once made."""

    def to_json(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "from_seq": self.from_seq,
            "through_seq": self.through_seq,
            "rows": [row.to_json() for row in self.rows],
            "marker_seq": self.marker_seq,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindOutline:
    """What a rewind undoes: shared by its preview and its result."""

    conversation_id: str
    to: str
    call_id: str | None
    """The call rewound to (None for a step whose call is not in the timeline)."""
    steps: list[StoredCheckpoint]
    """The checkpoints undone (the files part), oldest first."""
    files: list[PathChange] | None
    """Per path, what is put back (None: the files part was not asked)."""
    conflicts: list[Conflict]
    """Paths something else changed since, or changed while another call ran on the same
    source: the rewind is refused unless forced."""
    conversation: ConversationRewind | None
    """None: the conversation part was not asked."""

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "to": self.to,
            "call_id": self.call_id,
            "steps": [s.to_json() for s in self.steps],
            "files": None if self.files is None else [f.to_json() for f in self.files],
            "conflicts": [c.to_json() for c in self.conflicts],
            "conversation": None if self.conversation is None else self.conversation.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindPreview(RewindOutline):
    """What a rewind would do; nothing was changed."""

    blocked: str | None = None
    """Why the rewind cannot be made now (a run of the conversation is running or parked)."""

    def to_json(self) -> dict[str, Any]:
        return {**RewindOutline.to_json(self), "blocked": self.blocked}


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindResult(RewindOutline):
    """What a rewind did; when ``refused`` (conflicts, not forced), nothing changed and
    ``files`` is what would have been put back."""

    refused: bool
    forced: bool
    """Conflicting paths were overwritten."""
    restored: int = 0
    """Paths put back."""
    unrestored: list[str] = field(default_factory=list)
    """Paths that could not be put back (unreadable when their checkpoint was taken)."""

    def to_json(self) -> dict[str, Any]:
        return {
            **RewindOutline.to_json(self),
            "refused": self.refused,
            "forced": self.forced,
            "restored": self.restored,
            "unrestored": self.unrestored,
        }


@dataclass(slots=True, kw_only=True)
class _Plan:
    caller: Caller
    info: ConversationInfo
    call_id: str | None
    steps: list[StoredCheckpoint]
    calls: list[CallCheckpoint]
    kept: list[str]
    """The steps that stay (before the first undone one)."""
    conversation: ConversationRewind | None


def _fields(outline: RewindOutline) -> dict[str, Any]:
    """The outline's fields, to build a preview or a result from (no deep copies)."""
    return {f.name: getattr(outline, f.name) for f in fields(RewindOutline)}


def _call_position(rows: list[TimelineRow]) -> dict[str, TimelineRow]:
    return {row.call_id: row for row in rows if row.kind == "tool_call" and row.call_id}


def _from_call(
    steps: list[StoredCheckpoint], calls: dict[str, TimelineRow], target: TimelineRow
) -> list[StoredCheckpoint]:
    """The steps made by the call ``target`` or after it, oldest first."""
    for index, stored in enumerate(steps):
        row = calls.get(stored.call_id)
        if row is not None:
            if row.seq >= target.seq:
                return steps[index:]
        elif target.created_at is not None and stored.created_at >= target.created_at:
            return steps[index:]
    return []


class Rewinds:
    """Rewind previews and rewinds: ``platform.rewind_preview`` and ``platform.rewind``."""

    def __init__(self, kernel: Kernel, runtime: Runtime) -> None:
        self._kernel = kernel
        self._runtime = runtime

    def _keeper(self) -> CheckpointKeeper:
        from corral.shell.service import ShellService

        shells = self._kernel.services.get(ShellService)
        if shells is None:
            raise UsageError("shell execution is not installed on this platform: no checkpoints")
        return shells.checkpoints

    async def _writable(self, caller: Caller) -> set[str]:
        from corral.shell.service import ShellService

        return await self._kernel.services.require(ShellService).writable_roots(caller)

    async def checkpoints(
        self, conversation_id: str, *, user: str | None = None
    ) -> list[StoredCheckpoint]:
        await self._runtime.conversation(conversation_id, user=user)
        rows = self._keeper().rows
        return [] if rows is None else await rows.for_conversation(conversation_id)

    async def _plan(
        self, conversation_id: str, to: str, *, files: bool, conversation: bool, user: str | None
    ) -> _Plan:
        if not files and not conversation:
            raise UsageError("a rewind puts back the files, the conversation or both: not neither")
        to = str(to).strip()
        if not to:
            raise UsageError("say where to rewind to: a step number, checkpoint id or call id")
        caller = await self._kernel.caller(user)
        info = await self._runtime.conversation(conversation_id, user=user)
        keeper = self._keeper()
        rows = await self._runtime.conversations.rows(conversation_id)
        steps = [] if keeper.rows is None else await keeper.rows.for_conversation(conversation_id)
        calls_by_id = _call_position(rows)
        found = step_index(steps, to)
        if found is not None:
            call_id: str | None = steps[found].call_id
            undone = steps[found:]
        elif to in calls_by_id:
            call_id, undone = to, _from_call(steps, calls_by_id, calls_by_id[to])
        else:
            raise UsageError(
                f"no step, checkpoint or tool call {to!r} in conversation {conversation_id!r}: "
                f"give a step from 1 to {len(steps)} (`corral rewind {conversation_id}` "
                "lists them), a checkpoint id or a tool call id"
                if steps
                else f"conversation {conversation_id!r} has no checkpoints and no tool call "
                f"{to!r}: give a tool call id"
            )
        part = None
        if conversation:
            if call_id not in calls_by_id:
                raise UsageError(
                    f"step {to} was not made by a tool call of this conversation's timeline, "
                    "so there is no history to rewind: rewind its files only (`--files-only`)"
                )
            assert call_id is not None
            first, hidden = rewind_span(rows, call_id)
            part = ConversationRewind(
                call_id=call_id, from_seq=first, through_seq=rows[-1].seq, rows=hidden
            )
        calls: list[CallCheckpoint] = []
        if files and undone:
            calls = await load_calls(keeper, undone)
            check_writable(calls, await self._writable(caller))
        return _Plan(
            caller=caller,
            info=info,
            call_id=call_id,
            steps=undone if files else [],
            calls=calls,
            kept=[s.call_id for s in steps if s not in undone] if files else [],
            conversation=part,
        )

    async def preview(
        self,
        conversation_id: str,
        to: str,
        *,
        files: bool = True,
        conversation: bool = True,
        user: str | None = None,
    ) -> RewindPreview:
        """What :meth:`rewind` would do, changing nothing."""
        plan = await self._plan(
            conversation_id, to, files=files, conversation=conversation, user=user
        )
        outline = await self._outline(conversation_id, to, plan, files)
        blocked = await busy_message(self._runtime, plan.info) if plan.info.active_run_id else None
        return RewindPreview(**_fields(outline), blocked=blocked)

    async def _outline(
        self, conversation_id: str, to: str, plan: _Plan, files: bool
    ) -> RewindOutline:
        """What undoing ``plan`` puts back and what stands in its way, looked at now."""
        keeper = self._keeper()
        conflicts, changes = await asyncio.to_thread(
            lambda: (
                find_conflicts(keeper, conversation_id, plan.calls),
                preview_files(keeper, plan.calls),
            )
        )
        return RewindOutline(
            conversation_id=conversation_id,
            to=to,
            call_id=plan.call_id,
            steps=plan.steps,
            files=changes if files else None,
            conflicts=conflicts,
            conversation=plan.conversation,
        )

    async def rewind(
        self,
        conversation_id: str,
        to: str,
        *,
        files: bool = True,
        conversation: bool = True,
        force: bool = False,
        user: str | None = None,
    ) -> RewindResult:
        """Rewind the conversation's files and/or history to before ``to``.

        Raises :class:`~corral.errors.ConversationBusy` while one of its runs is running or
        parked; returns ``refused`` with the conflicts when something else changed the
        files since, unless ``force``."""
        info = await self._runtime.conversation(conversation_id, user=user)
        holder = holder_for(self._runtime.worker)
        async with self._kernel.sessions.begin() as session:
            claimed = await claim_conversation(session, conversation_id, holder)
        if not claimed:
            latest = await self._runtime.conversations.get(info.id)
            raise ConversationBusy(
                f"cannot rewind now: {await busy_message(self._runtime, latest)}"
            )
        try:
            return await self._rewind(conversation_id, to, files, conversation, force, user)
        finally:
            async with self._kernel.sessions.begin() as session:
                await release_conversation(session, conversation_id, holder)

    async def _rewind(
        self,
        conversation_id: str,
        to: str,
        files: bool,
        conversation: bool,
        force: bool,
        user: str | None,
    ) -> RewindResult:
        plan = await self._plan(
            conversation_id, to, files=files, conversation=conversation, user=user
        )
        keeper = self._keeper()
        calls = plan.calls
        outline = await self._outline(conversation_id, to, plan, files)
        conflicted = bool(outline.conflicts)
        result = RewindResult(
            **_fields(outline), refused=conflicted and not force, forced=conflicted and force
        )
        if result.refused:
            return result
        restored, unrestored = 0, list[str]()
        if calls:
            restored, unrestored = await asyncio.to_thread(
                restore_calls, keeper, conversation_id, calls, plan.kept
            )
            await keeper.drop([stored.call_id for stored in plan.steps])
        part = plan.conversation
        if part is not None:
            card = {
                "card": CARD,
                "id": "rw_" + secrets.token_hex(6),
                "to": to,
                "call_id": part.call_id,
                "from_seq": part.from_seq,
                "through_seq": part.through_seq,
                "hidden_rows": len(part.rows),
                "files": files,
                "steps_undone": [s.step for s in plan.steps],
                "paths_restored": restored,
                "by": plan.caller.name,
            }
            stored = await self._runtime.append(
                conversation_id, [NewRow(kind="card", user_id=plan.caller.user_id, data=card)]
            )
            part = replace(part, marker_seq=stored[0].seq)
        return replace(result, conversation=part, restored=restored, unrestored=unrestored)
