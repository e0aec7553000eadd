"""fs_write and fs_edit: whole-file writes and exact replacements, each atomic.

fs_write replaces an existing file only when the model has seen its current state in this
conversation (:mod:`~corral.packages.drive.read_log`) or says ``overwrite: true``. fs_edit
needs its ``old`` text exactly once (or ``replace_all``) and answers with a short diff.
Both write a temp file in the approved folder and rename it over the target, going from the
source's root without following a link (:mod:`corral.files`); a replaced file keeps its
permission bits but never setuid or setgid.
"""

from __future__ import annotations

import asyncio
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.errors import InvalidArguments, ToolError
from corral.files import write_file
from corral.packages.drive.handles import open_verified
from corral.packages.drive.locations import Location
from corral.packages.drive.service import Drive, drive_of
from corral.shell.checkpoints import Checkpoint
from corral.shell.checkpoints.keeper import retention_of
from corral.shell.checkpoints.rows import CallScope
from corral.tools.context import CallContext
from corral.tools.results import TextBlock, ToolResult

__all__ = ["DIFF_LINES", "MAX_EDIT_BYTES", "fs_edit", "fs_write", "fs_write_policy"]

DIFF_LINES = 60
"""Lines of diff an edit result shows."""
MAX_EDIT_BYTES = 20 * 1024 * 1024
_SHOWN_LINES = 8


async def fs_write_policy(args: dict[str, Any], ctx: CallContext) -> None:
    """The pipeline's policy step for fs_write and fs_edit: write access to the target."""
    await drive_of(ctx).locate(str(args["uri"]), ctx, "write")


def _root(location: Location) -> Path:
    if location.root is None:  # durable files are refused for writing before this
        raise ToolError(f"{location.uri!r} cannot be written", code="read_only")
    return location.root


@dataclass(slots=True)
class _Prior:
    """What the write will change, kept before it, and the calls open on its source then
    (their change sets will hold this write too)."""

    checkpoint: Checkpoint
    overlapped: dict[str, str]


async def _prior(ctx: CallContext, location: Location) -> _Prior | None:
    """What the write will change, kept before it (when the platform runs shells)."""
    shells = ctx.services.shells
    if shells is None or location.path is None or not ctx.live.get("checkpoints"):
        return None
    keeper = shells.checkpoints
    root = _root(location)
    checkpoint = await keeper.before_write(root, location.path)
    return _Prior(checkpoint, keeper.overlapping(root, ctx.call_id, ctx.conversation_id or ""))


async def _keep(
    ctx: CallContext, location: Location, prior: _Prior | None, data: dict[str, Any]
) -> None:
    shells = ctx.services.shells
    if shells is None or prior is None:
        return
    scope = CallScope(
        conversation_id=ctx.conversation_id,
        run_id=ctx.run_id,
        user_id=ctx.caller.user_id,
        tool=ctx.tool,
    )
    keeper, root = shells.checkpoints, _root(location)
    overlapped = prior.overlapped | keeper.overlapping(root, ctx.call_id, ctx.conversation_id or "")
    if overlapped and prior.checkpoint.priors:  # first, as for a call's change set
        await asyncio.to_thread(keeper.overlaps.record, ctx.call_id, {str(root): overlapped})
    kept = await keeper.keep(
        {str(root): prior.checkpoint}, ctx.call_id, scope, retention_of(ctx.live)
    )
    data["checkpoint"] = kept.summary()


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


async def _check_seen(drive: Drive, location: Location, stamp: int, ctx: CallContext) -> None:
    seen = (
        await drive.reads.last_seen(ctx.conversation_id, str(location.path))
        if ctx.conversation_id
        else None
    )
    if seen is None:
        where = (
            "in this conversation" if ctx.conversation_id else "(no conversation to remember reads)"
        )
        raise ToolError(
            f"{location.uri!r} exists and you have not read it {where}; read it with fs_read "
            "first, or call again with overwrite: true to replace it unread",
            code="not_read",
            data={"uri": location.uri},
        )
    if seen != stamp:
        raise ToolError(
            f"{location.uri!r} changed since you last read or wrote it; read it again with "
            "fs_read before replacing it, or call again with overwrite: true",
            code="changed_since_read",
            data={"uri": location.uri},
        )


async def fs_write(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    drive = drive_of(ctx)
    location = await drive.locate(str(args["uri"]), ctx, "write")
    assert location.path is not None
    path = location.path
    content = str(args["content"]).encode("utf-8")
    before = await asyncio.to_thread(_stat, path)
    if before is not None and path.is_dir():
        raise ToolError(f"{location.uri!r} is a folder; name a file in it", code="is_a_folder")
    if before is not None and not args.get("overwrite"):
        await _check_seen(drive, location, before.st_mtime_ns, ctx)
    prior = await _prior(ctx, location)
    after = await asyncio.to_thread(write_file, _root(location), path, content)
    lines = content.count(b"\n") + (0 if content.endswith(b"\n") or not content else 1)
    verb = "replaced" if before is not None else "created"
    data: dict[str, Any] = {
        "uri": location.uri,
        "path": str(path),
        "created": before is None,
        "size": len(content),
        "mtime_ns": after.st_mtime_ns,
    }
    await _keep(ctx, location, prior, data)
    return ToolResult(
        content=[
            TextBlock(f"Wrote {location.uri}: {verb}, {len(content):,} bytes, {lines:,} lines.")
        ],
        data=data,
    )


def _line_numbers(text: str, needle: str) -> list[int]:
    numbers: list[int] = []
    start = text.find(needle)
    while start != -1 and len(numbers) < _SHOWN_LINES + 1:
        numbers.append(text.count("\n", 0, start) + 1)
        start = text.find(needle, start + 1)
    return numbers


def _read_text(location: Location) -> tuple[str, os.stat_result]:
    assert location.path is not None
    with open_verified(location.path) as handle:
        stat = os.fstat(handle.fileno())
        if stat.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                f"{location.uri!r} is larger than {MAX_EDIT_BYTES:,} bytes; fs_edit changes "
                "text files up to that size",
                code="too_large",
            )
        raw = handle.read()
    if b"\x00" in raw[:8192]:
        raise ToolError(f"{location.uri!r} is a binary file; fs_edit changes text", code="binary")
    try:
        return raw.decode("utf-8"), stat
    except UnicodeDecodeError:
        raise ToolError(
            f"{location.uri!r} is not UTF-8 text, so an exact replacement cannot be made safely",
            code="not_utf8",
        ) from None


def _diff(before: str, after: str, uri: str) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            f"{uri} (before)",
            f"{uri} (after)",
            n=2,
            lineterm="",
        )
    )
    if len(lines) > DIFF_LINES:
        left = len(lines) - DIFF_LINES
        lines = [*lines[:DIFF_LINES], f"[… {left:,} more diff lines not shown]"]
    return "\n".join(lines)


async def fs_edit(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    drive = drive_of(ctx)
    location = await drive.locate(str(args["uri"]), ctx, "write")
    assert location.path is not None
    old, new = str(args["old"]), str(args["new"])
    if old == new:
        raise InvalidArguments("old and new are the same text; there is nothing to change")
    if location.path.is_dir():
        raise ToolError(f"{location.uri!r} is a folder; name a file in it", code="is_a_folder")
    text, stat = await asyncio.to_thread(_read_text, location)
    seen = (
        await drive.reads.last_seen(ctx.conversation_id, str(location.path))
        if ctx.conversation_id
        else None
    )
    count = text.count(old)
    if count == 0:
        hint = (
            " (it is there once leading and trailing whitespace are ignored: copy the "
            "indentation exactly, without the line-number prefix)"
            if old.strip() and old.strip() in text
            else ""
        )
        raise ToolError(
            f"old text was not found in {location.uri!r}{hint}; read the file with fs_read "
            "and copy the text exactly",
            code="old_not_found",
        )
    if count > 1 and not args.get("replace_all"):
        found = _line_numbers(text, old)
        shown = ", ".join(map(str, found[:_SHOWN_LINES])) + (", …" if count > _SHOWN_LINES else "")
        raise ToolError(
            f"old text appears {count} times in {location.uri!r} (at lines {shown}); add "
            "surrounding lines to make it unique, or pass replace_all: true to change all",
            code="old_not_unique",
            data={"count": count, "lines": found[:_SHOWN_LINES]},
        )
    changed = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
    prior = await _prior(ctx, location)
    after = await asyncio.to_thread(
        write_file, _root(location), location.path, changed.encode("utf-8")
    )
    replaced = count if args.get("replace_all") else 1
    summary = f"Edited {location.uri}: {replaced} replacement(s)."
    data: dict[str, Any] = {
        "uri": location.uri,
        "path": str(location.path),
        "replacements": replaced,
    }
    if seen == stat.st_mtime_ns:
        data["mtime_ns"] = after.st_mtime_ns  # the model knew the file, and now its change
    await _keep(ctx, location, prior, data)
    return ToolResult(
        content=[TextBlock(summary + "\n" + _diff(text, changed, location.uri))], data=data
    )
