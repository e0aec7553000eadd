"""Reading the final answer's body: its kind, the ceiling for that kind, and the refusals.

The kind comes from ``Content-Type``, or from the first bytes when the type says nothing
(missing, ``application/octet-stream``). A kind the caller does not accept is refused
before the body is read; a declared ``Content-Length`` above the ceiling is refused before
reading too, and the ceiling is enforced again while streaming.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from .body import BodyDecoder, ContentKind, read_limited, sniffed_kind
from .errors import FetchError
from .policy import FetchPolicy

__all__ = ["read_response_body", "size_text"]

_SNIFF_BYTES = 8
_KIND_NAMES: dict[ContentKind, str] = {"pdf": "PDF", "text": "text", "other": "file"}


def size_text(size: int) -> str:
    """A byte count for people: ``20 MiB``, ``39.0625 KiB``, ``512 bytes``."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):g} MiB"
    if size >= 1024:
        return f"{size / 1024:g} KiB"
    return f"{size} bytes"


def _content_length(headers: httpx.Headers) -> int | None:
    value = headers.get("content-length")
    if value is None:
        return None
    try:
        length = int(value.split(",")[0].strip())
    except ValueError:
        return None
    return length if length >= 0 else None


def _unsupported(url: str, media: str, kind: ContentKind, accept: frozenset[str]) -> FetchError:
    shown = media or "no content type"
    return FetchError(
        f"{url!r} is {shown} ({kind} content), which this call cannot use; it accepts "
        f"{', '.join(sorted(accept))} content",
        code="unsupported_content",
        url=url,
        data={"media_type": media, "kind": kind},
    )


def too_large(
    url: str, kind: ContentKind, limit: int, setting: str, size: int, *, declared: bool
) -> FetchError:
    """The ``too_large`` refusal, naming the ceiling and the setting that holds it."""
    what = _KIND_NAMES[kind]
    measured = (
        f"declares {size_text(size)}" if declared else f"exceeded {size_text(limit)} while reading"
    )
    advice = (
        "a PDF is only readable whole, so it was not cut; ask the administrator to raise "
        f"{setting!r} or find a smaller copy"
        if kind == "pdf"
        else f"fetch a more specific page, or ask the administrator to raise {setting!r}"
    )
    return FetchError(
        f"the {what} at {url!r} {measured}, above the {size_text(limit)} ceiling for {what} "
        f"content (setting {setting!r}); {advice}",
        code="too_large",
        url=url,
        data={"limit": limit, "setting": setting, "kind": kind, "size": size},
    )


async def read_response_body(
    response: httpx.Response,
    *,
    url: str,
    media: str,
    kind: ContentKind | None,
    accept: frozenset[ContentKind],
    policy: FetchPolicy,
    progress: Callable[[int], None],
) -> tuple[bytes, ContentKind]:
    """Read the whole decoded body of ``response`` under the ceiling for its kind.

    ``kind`` is the declared kind, ``None`` to sniff. Transport errors propagate as httpx
    exceptions for the caller to map.
    """
    try:
        decoder = BodyDecoder(response.headers.get("content-encoding"))
    except FetchError as exc:
        raise exc.at(url) from None
    chunks = response.aiter_raw()
    try:
        prefix = b""
        if kind is None:
            room = max(policy.ceiling(k)[0] for k in _KIND_NAMES)
            async for chunk in chunks:
                prefix += decoder.feed(chunk, room - len(prefix))
                if len(prefix) >= _SNIFF_BYTES:
                    break
            kind = sniffed_kind(media, prefix)
        final: ContentKind = kind
        if final not in accept:
            raise _unsupported(url, media, final, accept)
        limit, setting = policy.ceiling(final)
        declared = _content_length(response.headers)
        if decoder.encoding == "identity" and declared is not None and declared > limit:
            raise too_large(url, final, limit, setting, declared, declared=True)
        body = await read_limited(
            chunks,
            decoder,
            limit,
            lambda size: too_large(url, final, limit, setting, size, declared=False),
            prefix=prefix,
            progress=progress,
        )
    finally:
        # aiter_raw() is an async generator; close it even when the read stopped early.
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
    return body, final
