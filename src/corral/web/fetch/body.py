"""Reading a response body: its content kind, its decoding and its size ceiling.

The ceiling applies to the *decoded* body, and decompression is bounded: a gzip bomb is
cut off once it would exceed the ceiling, without inflating the rest into memory. Only the
encodings we advertise (gzip, deflate) or none are accepted.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Callable
from typing import Literal

from .errors import FetchError

__all__ = [
    "ACCEPT_ENCODING",
    "BodyDecoder",
    "ContentKind",
    "declared_kind",
    "media_type",
    "read_limited",
    "sniffed_kind",
]

ContentKind = Literal["text", "pdf", "other"]
"""Coarse content kinds, each with its own ceiling: text-like, PDF, and anything else."""

ACCEPT_ENCODING = "gzip, deflate"

_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/xhtml+xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-ndjson",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/markdown",
        "application/x-www-form-urlencoded",
    }
)
_PDF_TYPES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})
_SNIFF_TYPES = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/download",
        "application/x-download",
        "application/force-download",
        "application/unknown",
    }
)
_PDF_MAGIC = b"%PDF-"


def media_type(content_type: str | None) -> tuple[str, str | None]:
    """Split a ``Content-Type`` value into its lowercase media type and its charset."""
    if not content_type:
        return "", None
    head, *params = content_type.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return head.strip().lower(), charset


def declared_kind(media: str) -> ContentKind | None:
    """The kind a media type declares, or ``None`` when the body must be sniffed."""
    if media in _SNIFF_TYPES:
        return None
    if media in _PDF_TYPES:
        return "pdf"
    if media.startswith("text/") or media in _TEXT_TYPES:
        return "text"
    if media.endswith(("+json", "+xml")):
        return "text"
    return "other"


def sniffed_kind(media: str, first_bytes: bytes) -> ContentKind:
    """The kind of a body whose declared type says nothing useful."""
    if first_bytes.lstrip()[:5] == _PDF_MAGIC:
        return "pdf"
    return "text" if media == "" else "other"


class BodyDecoder:
    """Undoes ``Content-Encoding`` without ever producing more than it is asked for."""

    def __init__(self, encoding: str | None) -> None:
        value = (encoding or "").strip().lower()
        self.encoding = value or "identity"
        self._zlib: zlib._Decompress | None = None
        self._wbits = 0
        self._started = False
        self._finished = False
        self._members = 0
        if value in ("gzip", "x-gzip"):
            self._wbits = 16 + zlib.MAX_WBITS
        elif value == "deflate":
            self._wbits = zlib.MAX_WBITS
        elif value not in ("", "identity"):
            raise FetchError(
                f"the server used the content encoding {value!r}, which cannot be decoded "
                "(only gzip and deflate are supported)",
                code="unsupported_content",
                data={"content_encoding": value},
            )
        if self._wbits:
            self._zlib = zlib.decompressobj(self._wbits)

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data``, returning at most ``room + 1`` bytes (one more means too large).

        Input left over when the output reaches ``room + 1`` is dropped: the caller is about
        to refuse the body anyway.
        """
        if self._zlib is None or self._finished:
            return data if self._zlib is None else b""
        out = bytearray()
        pending = data
        while pending and len(out) <= room:
            try:
                out += self._zlib.decompress(pending, room + 1 - len(out))
            except zlib.error:
                if not self._started and self._wbits == zlib.MAX_WBITS:
                    # Many servers send raw deflate under "deflate": retry that way.
                    self._wbits = -zlib.MAX_WBITS
                    self._zlib = zlib.decompressobj(self._wbits)
                    continue
                if self._members > 0:
                    # Trailing bytes after a complete gzip member: ignored, as browsers do.
                    self._finished = True
                    break
                raise self._corrupt() from None
            self._started = True
            if self._zlib.eof:
                self._members += 1
                pending = self._zlib.unused_data
                if pending and self._wbits > 0 and self._wbits & 16:
                    self._zlib = zlib.decompressobj(self._wbits)
                else:
                    self._finished = True
                    break
            else:
                pending = self._zlib.unconsumed_tail
        return bytes(out)

    def flush(self, room: int) -> bytes:
        """Whatever the decoder still holds, at most ``room + 1`` bytes."""
        if self._zlib is None or self._finished:
            return b""
        try:
            return self._zlib.flush(room + 1)
        except zlib.error:
            raise self._corrupt() from None

    def _corrupt(self) -> FetchError:
        return FetchError(
            f"the server's {self.encoding} body is corrupt and cannot be decoded",
            code="network_error",
        )


async def read_limited(
    chunks: AsyncIterator[bytes],
    decoder: BodyDecoder,
    limit: int,
    too_large: Callable[[int], FetchError],
    *,
    prefix: bytes = b"",
    progress: Callable[[int], None] | None = None,
) -> bytes:
    """Read and decode ``chunks`` until the end, raising ``too_large(n)`` past ``limit``.

    ``prefix`` is already-decoded data (from sniffing) that counts towards the limit.
    """
    body = bytearray(prefix)
    if len(body) > limit:
        raise too_large(len(body))
    async for chunk in chunks:
        body += decoder.feed(chunk, limit - len(body))
        if len(body) > limit:
            raise too_large(len(body))
        if progress is not None:
            progress(len(body))
    body += decoder.flush(limit - len(body))
    if len(body) > limit:
        raise too_large(len(body))
    return bytes(body)
