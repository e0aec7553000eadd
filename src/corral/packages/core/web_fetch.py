"""web_fetch: one URL through the hardened pipeline, then extraction, then a header."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.errors import ToolError
from corral.files import write_file
from corral.tools.context import CallContext
from corral.tools.results import TextBlock, ToolResult
from corral.tools.services import Web
from corral.web.fetch import FetchError

if TYPE_CHECKING:
    from corral.web.extraction import Extraction
    from corral.web.fetch import FetchResponse

__all__ = ["web_fetch"]

DEFAULT_MAX_CHARS = 50_000
_ERROR_EXCERPT = 600


def _access(ctx: CallContext) -> Web:
    if ctx.services.web is None:
        raise ToolError("web access is not configured on this platform", code="unavailable")
    return ctx.services.web


def _header(
    response: FetchResponse, extraction: Extraction, *, returned: int, total: int, cut: bool
) -> list[str]:
    lines = [
        f"url: {response.url}",
        f"status: {response.status}",
        f"content type: {response.content_type or 'unknown'}",
        *extraction.header_lines(),
        f"original length: {extraction.original_length:,} bytes, {total:,} characters",
        f"returned length: {returned:,} characters",
    ]
    if len(response.redirects) > 0:
        lines.insert(1, f"redirects: {len(response.redirects)}")
    if cut:
        lines.append(
            f"cut: yes, max_chars kept the first {returned:,} of {total:,} characters; "
            "call again with a larger max_chars to read further"
        )
    return lines


def _save_path(target: str, url: str, ctx: CallContext) -> tuple[Path, Path, str]:
    """Where save_to stores the text: the source's root, the file below it, its URI."""
    if target == "tmp":
        host = re.sub(r"[^A-Za-z0-9.-]", "_", url.split("//", 1)[-1].split("/", 1)[0])[:60]
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{host}-{secrets.token_hex(3)}.md"
        target = f"data://tmp/web_fetch/{name}"
    if not target.lower().startswith("data://"):
        raise ToolError(
            f'save_to {target!r} must be "tmp" or a data:// path in the project drive',
            code="invalid_arguments",
        )
    resolved = ctx.sources.check(ctx.caller, target, "write")
    assert resolved.source is not None  # check() refuses a path no source covers
    return resolved.source.real_root, resolved.path, resolved.uri


async def web_fetch(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    fetcher = _access(ctx).fetcher(ctx.live)
    fmt = args.get("format", "markdown")
    save_to = args.get("save_to")
    # Check where the result would be stored before spending the network call.
    save = _save_path(save_to, args["url"], ctx) if save_to else None
    response = await fetcher.fetch(
        args["url"],
        allow_hosts=args.get("allow_hosts"),
        timeout_ms=args.get("timeout_ms"),
        accept=("text", "pdf"),
    )
    # Imported here: extraction loads trafilatura, which only fetching needs.
    from corral.web.extraction import extract_document

    extraction = await asyncio.to_thread(
        extract_document, response.body, response.content_type or "", url=response.url, format=fmt
    )
    if not response.ok:
        from corral.web.fetch.response import http_error  # loaded with the response already

        refusal = http_error(response.url, response.status, response.reason)
        excerpt = " ".join(extraction.text[:_ERROR_EXCERPT].split())
        raise FetchError(
            refusal.message + (f". The page said: {excerpt}" if excerpt else ""),
            code="http_error",
            url=response.url,
            data={"status": response.status},
        )
    text = extraction.text
    max_chars = int(args.get("max_chars", DEFAULT_MAX_CHARS))
    cut = len(text) > max_chars
    returned = text[:max_chars] if cut else text
    header = _header(response, extraction, returned=len(returned), total=len(text), cut=cut)
    saved_uri = None
    if save is not None:
        root, path, saved_uri = save
        await asyncio.to_thread(write_file, root, path, text.encode("utf-8"))
        header.append(f"saved to: {saved_uri} ({len(text):,} characters, not cut)")
    body = "\n".join(header) + "\n\n" + returned
    return ToolResult(
        content=[TextBlock(body)],
        data={
            "url": response.url,
            "status": response.status,
            "content_type": response.content_type,
            "kind": extraction.kind,
            "extractor": extraction.extractor,
            "title": extraction.title,
            "js_only": extraction.js_only,
            "notes": list(extraction.notes),
            "original_bytes": extraction.original_length,
            "original_chars": len(text),
            "returned_chars": len(returned),
            "cut": cut,
            "redirects": [hop.url for hop in response.redirects],
            "saved_to": saved_uri,
        },
    )
