"""fs_list: a folder's entries with kind, size and modification time."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from corral.errors import ToolError
from corral.packages.drive.globs import Glob
from corral.packages.drive.kinds import human_size
from corral.packages.drive.locations import Location
from corral.packages.drive.service import drive_of
from corral.packages.drive.walking import Entry, Walk
from corral.tools.context import CallContext
from corral.tools.results import TextBlock, ToolResult

__all__ = ["fs_list", "fs_list_policy"]

_SCAN_CEILING = 200_000
"""Entries looked at in one listing, whatever the limit (a bound on a huge tree)."""


async def fs_list_policy(args: dict[str, Any], ctx: CallContext) -> None:
    """The pipeline's policy step: the folder must be readable by this caller."""
    await drive_of(ctx).locate(str(args.get("uri", "data://")), ctx, "read")


def _row(entry: Entry) -> tuple[str, int | None, float, str]:
    item = entry.entry
    stat = item.stat(follow_symlinks=False)
    if item.is_symlink():
        try:
            target = os.readlink(item.path)
        except OSError:
            target = "?"
        return "link", None, stat.st_mtime, f"{entry.relative} -> {target}"
    if item.is_dir(follow_symlinks=False):
        return "dir", None, stat.st_mtime, entry.relative + "/"
    return "file", stat.st_size, stat.st_mtime, entry.relative


def _list(location: Location, args: dict[str, Any], ctx: CallContext) -> ToolResult:
    assert location.path is not None
    if not location.path.is_dir():
        raise ToolError(
            f"{location.uri!r} is not a folder; read a file with fs_read", code="not_a_folder"
        )
    pattern = Glob.of(args["pattern"]) if args.get("pattern") else None
    walk = Walk(location.path, ctx.caller, ctx.sources, hidden=bool(args.get("hidden")))
    rows: list[tuple[str, int | None, float, str]] = []
    scanned = 0
    for entry in walk.entries(int(args.get("depth", 1))):
        scanned += 1
        if scanned > _SCAN_CEILING:
            break
        if pattern is not None and not pattern.matches(entry.relative):
            continue
        try:
            rows.append(_row(entry))
        except OSError:
            walk.errors += 1
    if args.get("sort") == "newest":
        rows.sort(key=lambda r: r[2], reverse=True)
    else:
        rows.sort(key=lambda r: (r[0] != "dir", r[3]))
    limit = int(args.get("limit", 500))
    shown = rows[:limit]
    lines = [
        f"{kind:<4} {'-' if size is None else human_size(size):>9}  "
        f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(mtime))}  {name}"
        for kind, size, mtime, name in shown
    ]
    notes = []
    if len(rows) > limit:
        notes.append(f"{len(rows) - limit:,} more entries not shown (limit {limit})")
    if scanned > _SCAN_CEILING:
        notes.append(f"stopped after looking at {_SCAN_CEILING:,} entries; narrow the folder")
    if walk.skipped:
        notes.append(f"{walk.skipped:,} entries you may not read were left out")
    if walk.errors:
        notes.append(f"{walk.errors:,} entries could not be read")
    header = f"{location.uri} — {len(rows):,} entries" + (
        f" matching {args['pattern']!r}" if pattern else ""
    )
    body = "\n".join([header, *lines, *(f"[{note}]" for note in notes)])
    return ToolResult(
        content=[TextBlock(body)],
        data={
            "uri": location.uri,
            "entries": len(rows),
            "shown": len(shown),
            "skipped": walk.skipped,
        },
    )


async def fs_list(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    location = await drive_of(ctx).locate(str(args.get("uri", "data://")), ctx, "read")
    if location.path is None:
        raise ToolError(f"{location.uri!r} is a document, not a folder", code="not_a_folder")
    return await asyncio.to_thread(_list, location, args, ctx)
