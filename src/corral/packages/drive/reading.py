"""fs_read: one file as numbered lines, real media, PDF text or a drawn page, or a description.

Media from a file with a source URI is returned as a reference (a ``resource`` block): the
stored result keeps only the URI, and each prompt re-reads the bytes under the reader's
access (a model that does not take images gets a marker instead). A durable platform file
is not under a source, so its media would be inline, and a drawn PDF page is always inline:
re-drawing would not be reproducible.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral.errors import ToolError
from corral.packages.drive.handles import open_verified
from corral.packages.drive.kinds import (
    SNIFF_BYTES,
    describe_binary,
    human_size,
    image_size,
    sniff,
)
from corral.packages.drive.locations import Location
from corral.packages.drive.pdf_pages import page_image, pdf_text
from corral.packages.drive.service import drive_of
from corral.packages.drive.text import READ_BUDGET, number_lines
from corral.tools.context import CallContext
from corral.tools.results import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ResourceBlock,
    TextBlock,
    ToolResult,
)

__all__ = ["MAX_MEDIA_BYTES", "MAX_TEXT_BYTES", "fs_read", "fs_read_policy", "read_location"]

MAX_MEDIA_BYTES = 20 * 1024 * 1024
"""Largest image or audio file returned as media (the prompt re-reads up to the same)."""
MAX_TEXT_BYTES = 512 * 1024 * 1024
"""Largest text file read line by line."""
_DEFAULT_LIMIT = 2000


async def fs_read_policy(args: dict[str, Any], ctx: CallContext) -> None:
    """The pipeline's policy step: the target must be readable by this caller."""
    await drive_of(ctx).locate(str(args["uri"]), ctx, "read")


async def fs_read(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    location = await drive_of(ctx).locate(str(args["uri"]), ctx, "read")
    offset = int(args.get("offset", 1))
    limit = int(args.get("limit", _DEFAULT_LIMIT))
    return await asyncio.to_thread(
        read_location,
        location,
        offset=offset,
        limit=limit,
        live=ctx.live,
        render_page=args.get("render_page"),
    )


def read_location(
    location: Location,
    *,
    offset: int = 1,
    limit: int = _DEFAULT_LIMIT,
    live: Mapping[str, Any],
    render_page: int | None = None,
    budget: int = READ_BUDGET,
) -> ToolResult:
    """What fs_read returns for a resolved file (blocking: run it in a thread)."""
    if location.document is not None:
        lines = location.document.splitlines(True)
        return _text_result(location, lines, offset, limit, {}, budget)
    assert location.path is not None
    if location.path.is_dir():
        raise ToolError(
            f"{location.uri!r} is a folder; list it with fs_list or search it with fs_search",
            code="is_a_folder",
        )
    with open_verified(location.path) as handle:
        stat = os.fstat(handle.fileno())
        head = handle.read(SNIFF_BYTES)
        kind = sniff(head, location.path.name)
        facts = {
            "kind": kind.kind,
            "media_type": kind.media_type,
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }
        if render_page is not None and kind.kind != "pdf":
            raise ToolError(
                f"render_page is for PDF files; {location.uri!r} is {kind.media_type}",
                code="invalid_arguments",
            )
        if kind.kind in ("image", "audio"):
            return _media(location, handle, head, kind.kind, kind.media_type, facts)
        if kind.kind == "pdf":
            return _pdf(location, handle, render_page, (offset, limit, budget), live, facts)
        if kind.kind == "binary":
            return _binary(location, head, facts)
        if stat.st_size > MAX_TEXT_BYTES:
            raise ToolError(
                f"{location.uri!r} is {human_size(stat.st_size)}, above the "
                f"{human_size(MAX_TEXT_BYTES)} read ceiling; search it with fs_search instead",
                code="too_large",
            )
        handle.seek(0)
        text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline="")
        return _text_result(location, text, offset, limit, facts, budget)


def _text_result(
    location: Location,
    lines: Any,
    offset: int,
    limit: int,
    facts: dict[str, Any],
    budget: int,
) -> ToolResult:
    window = number_lines(lines, offset=offset, limit=limit, budget=budget)
    marker = window.marker()
    header = f"{location.uri} ({window.total:,} lines)"
    body = "\n".join(part for part in (header, window.text, marker) if part)
    return ToolResult(
        content=[TextBlock(body)],
        data={
            **_identity(location),
            "kind": "text",
            **facts,
            "first_line": window.first,
            "last_line": window.last,
            "total_lines": window.total,
            "complete": window.complete,
        },
    )


def _identity(location: Location) -> dict[str, Any]:
    return {"uri": location.uri, "path": str(location.path) if location.path else None}


def _media(
    location: Location,
    handle: Any,
    head: bytes,
    kind: str,
    media_type: str,
    facts: dict[str, Any],
) -> ToolResult:
    size = int(facts["size"])
    if size > MAX_MEDIA_BYTES:
        raise ToolError(
            f"{location.uri!r} is {human_size(size)}, above the "
            f"{human_size(MAX_MEDIA_BYTES)} ceiling for {kind} a model reads",
            code="too_large",
        )
    dimensions = image_size(head, media_type) if kind == "image" else None
    shown = f", {dimensions[0]}x{dimensions[1]} px" if dimensions else ""
    header = TextBlock(f"{location.uri}: {kind} {media_type}, {human_size(size)}{shown}")
    block: ContentBlock
    if location.durable:
        handle.seek(0)
        data = handle.read()
        block = ImageBlock(data, media_type) if kind == "image" else AudioBlock(data, media_type)
    else:
        block = ResourceBlock(location.uri, media_type, Path(location.uri).name)
    extra = {"width": dimensions[0], "height": dimensions[1]} if dimensions else {}
    return ToolResult(content=[header, block], data={**_identity(location), **facts, **extra})


def _binary(location: Location, head: bytes, facts: dict[str, Any]) -> ToolResult:
    what = describe_binary(head)
    text = (
        f"{location.uri}: binary file, {human_size(int(facts['size']))}, {facts['media_type']} — "
        f"{what}. Its bytes are not shown; inspect it with a suitable command through "
        "execute if you need to (e.g. `file`, `unzip -l`, `xxd | head`)."
    )
    return ToolResult(
        content=[TextBlock(text)], data={**_identity(location), **facts, "described": what}
    )


def _pdf(
    location: Location,
    handle: Any,
    page: int | None,
    window: tuple[int, int, int],
    live: Mapping[str, Any],
    facts: dict[str, Any],
) -> ToolResult:
    ceiling = int(live.get("web_fetch_pdf_max_bytes", 50 * 1024 * 1024))
    size = int(facts["size"])
    if size > ceiling:
        raise ToolError(
            f"{location.uri!r} is {human_size(size)}, above the PDF ceiling of "
            f"{human_size(ceiling)} (live setting web_fetch_pdf_max_bytes); a PDF cut short "
            "reads as a damaged file",
            code="too_large",
        )
    handle.seek(0)
    body = handle.read()
    if page is None:
        lines = pdf_text(body, location.uri).splitlines(True)
        offset, limit, budget = window
        return _text_result(location, lines, offset, limit, {**facts, "kind": "pdf"}, budget)
    from pypdf import PdfReader

    try:
        pages = len(PdfReader(io.BytesIO(body)).pages)
    except Exception as err:  # pypdf raises many types on damaged files
        raise ToolError(
            f"the PDF {location.uri!r} cannot be opened ({type(err).__name__}); it is damaged",
            code="unreadable_pdf",
        ) from None
    image = page_image(handle, int(page), pages)
    text = f"{location.uri}: page {page} of {pages}, drawn as image/png ({human_size(len(image))})"
    return ToolResult(
        content=[TextBlock(text), ImageBlock(image, "image/png")],
        data={**_identity(location), **facts, "page": page, "pages": pages},
    )
