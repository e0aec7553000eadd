"""Resolving compact_history's targets against the stored timeline.

A tool output is named by its tool_use_id, any other prompt row by its sequence number.
Every target is checked before anything is written, and all problems are reported at once
with stable codes: ``unknown_tool_use_id``, ``no_output_yet``, ``unknown_sequence``,
``use_tool_use_id`` (a sequence number that names a tool call or result),
``protected_target`` (compact_history's own rows), ``not_in_prompt`` (cards).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import ToolError
from corral.runtime.compaction.cards import CARD, TOGGLE
from corral.runtime.compaction.trims import TRIMMABLE
from corral.runtime.timeline import TimelineRow
from corral.store import runtime_tables as rt

__all__ = ["PROTECTED_TOOL", "Resolved", "resolve_targets"]

PROTECTED_TOOL = "compact_history"


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    row: TimelineRow
    tool_use_id: str | None = None
    tool: str | None = None


async def _rows(
    sessions: async_sessionmaker[AsyncSession],
    conversation_id: str,
    ids: Sequence[str],
    seqs: Sequence[int],
) -> list[TimelineRow]:
    c = rt.ConversationRow
    wanted: list[ColumnElement[bool]] = []
    if seqs:
        wanted.append(c.seq.in_(list(seqs)))
    if ids:
        wanted.append(and_(c.call_id.in_(list(ids)), c.kind.in_(["tool_call", "tool_result"])))
    query = (
        select(c.seq, c.kind, c.data, c.run_id, c.user_id, c.call_id)
        .where(c.conversation_id == conversation_id, or_(*wanted))
        .order_by(c.seq)
    )
    async with sessions() as session:
        return [
            TimelineRow(seq=s, kind=k, data=d, run_id=r, user_id=u, call_id=i)
            for s, k, d, r, u, i in await session.execute(query)
        ]


def _by_id(
    tool_use_id: str, calls: Mapping[str, TimelineRow], results: Mapping[str, TimelineRow]
) -> Resolved | tuple[str, str]:
    call = calls.get(tool_use_id)
    if call is None:
        return "unknown_tool_use_id", f"no tool call {tool_use_id!r} in this conversation"
    tool = str(call.data.get("tool", ""))
    if tool == PROTECTED_TOOL:
        return "protected_target", f"{tool_use_id!r} is a compact_history call; those stay"
    result = results.get(tool_use_id)
    if result is None:
        return "no_output_yet", f"call {tool_use_id!r} ({tool}) has no output yet"
    return Resolved(row=result, tool_use_id=tool_use_id, tool=tool)


def _by_seq(seq: int, rows: Mapping[int, TimelineRow]) -> Resolved | tuple[str, str]:
    row = rows.get(seq)
    if row is None:
        return "unknown_sequence", f"no row {seq} in this conversation"
    if row.kind in ("tool_call", "tool_result"):
        tool = str(row.data.get("tool", ""))
        if tool == PROTECTED_TOOL:
            return "protected_target", f"row {seq} belongs to a compact_history call; it stays"
        return (
            "use_tool_use_id",
            f"row {seq} is a {tool} {row.kind.split('_')[1]}: name its output by tool_use_id "
            f"{row.call_id!r} instead",
        )
    if row.kind == "card" and row.data.get("card") in (CARD, TOGGLE):
        return "protected_target", f"row {seq} is a compaction card; it stays"
    if row.kind not in TRIMMABLE:
        return "not_in_prompt", f"row {seq} is a {row.kind} row, which the model never reads"
    return Resolved(row=row)


async def resolve_targets(
    sessions: async_sessionmaker[AsyncSession],
    conversation_id: str,
    targets: Sequence[Mapping[str, Any]],
) -> list[Resolved]:
    """The rows ``targets`` name, in timeline order, once each; or a ToolError naming
    every target that cannot be trimmed."""
    ids = [str(t["tool_use_id"]) for t in targets if "tool_use_id" in t]
    seqs = [int(t["sequence"]) for t in targets if "sequence" in t]
    rows = await _rows(sessions, conversation_id, ids, seqs)
    calls = {r.call_id: r for r in rows if r.kind == "tool_call" and r.call_id}
    results: dict[str, TimelineRow] = {}
    for r in rows:
        if r.kind == "tool_result" and r.call_id and r.call_id not in results:
            results[r.call_id] = r
    by_seq = {r.seq: r for r in rows}
    found: dict[int, Resolved] = {}
    problems: list[tuple[str, str]] = []
    for target in targets:
        if "tool_use_id" in target:
            outcome = _by_id(str(target["tool_use_id"]), calls, results)
        else:
            outcome = _by_seq(int(target["sequence"]), by_seq)
        if isinstance(outcome, Resolved):
            found.setdefault(outcome.row.seq, outcome)
        else:
            problems.append(outcome)
    if problems:
        codes = [code for code, _ in problems]
        raise ToolError(
            "nothing was trimmed: "
            + "; ".join(message for _, message in problems)
            + ". Use the handles the context map or your own tool calls show, and call again.",
            code=codes[0],
            data={"problems": [{"code": c, "message": m} for c, m in problems]},
        )
    return [found[seq] for seq in sorted(found)]
