"""Tool result content for the model: text, real media where the model reads it, markers else.

Stored results keep server-rendered media inline (base64) and media from files as a
:class:`~corral.tools.results.ResourceBlock` reference. A reference is re-read every time
the prompt is built, under the access of the person the run acts for (the URI policy): a
file that was deleted, or that this person may no longer read, becomes a short "no longer
available" marker instead of breaking the conversation.
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from corral.errors import PolicyDenied
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.runtime.models.providers import MediaSupport

if TYPE_CHECKING:
    from pydantic_ai.messages import BinaryContent

__all__ = ["MAX_MEDIA_BYTES", "MediaReader", "ResultContent", "result_content"]

MAX_MEDIA_BYTES = 20 * 1024 * 1024
"""Largest file re-read as media for a prompt."""

ResultContent: TypeAlias = "list[str | BinaryContent]"


def _kind(media_type: str) -> str:
    return media_type.split("/", 1)[0]


def _marker(kind: str, media_type: str, size: int | None, why: str) -> str:
    bytes_ = f", {size:,} bytes" if size is not None else ""
    return f"[{kind} {media_type}{bytes_}: {why}]"


class MediaReader:
    """Reads referenced media under a caller's access; caches bytes by file stamp."""

    def __init__(self, cache_bytes: int = 64 * 1024 * 1024) -> None:
        self._cache: OrderedDict[str, tuple[tuple[int, int], bytes]] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._held = 0

    def read(self, uri: str, caller: Caller, sources: SourcePolicy) -> bytes | str:
        """The bytes behind ``uri``, or why they are no longer available."""
        try:
            resolved = sources.check(caller, uri, "read")
        except PolicyDenied:
            return "you may no longer read it"
        path = resolved.path
        try:
            stat = path.stat()
        except OSError:
            return "the file was deleted or moved"
        if stat.st_size > MAX_MEDIA_BYTES:
            return f"it is larger than {MAX_MEDIA_BYTES:,} bytes"
        stamp = (stat.st_mtime_ns, stat.st_size)
        key = str(path)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == stamp:
            self._cache.move_to_end(key)
            return cached[1]
        try:
            data = path.read_bytes()
        except OSError:
            return "the file could not be read"
        self._remember(key, stamp, data)
        return data

    def _remember(self, key: str, stamp: tuple[int, int], data: bytes) -> None:
        old = self._cache.pop(key, None)
        if old is not None:
            self._held -= len(old[1])
        self._cache[key] = (stamp, data)
        self._held += len(data)
        while self._held > self._cache_bytes and len(self._cache) > 1:
            _, (_, dropped) = self._cache.popitem(last=False)
            self._held -= len(dropped)


def _inline(block: Mapping[str, Any], media: MediaSupport) -> str | BinaryContent:
    media_type = str(block.get("media_type", "application/octet-stream"))
    kind = block.get("type", _kind(media_type))
    try:
        data = base64.b64decode(block.get("data", ""), validate=True)
    except (binascii.Error, ValueError):
        return _marker(kind, media_type, None, "stored data is damaged")
    accepted = media.images if kind == "image" else media.audio
    if not accepted:
        return _marker(kind, media_type, len(data), f"this model does not take {kind} input")
    from pydantic_ai.messages import BinaryContent

    return BinaryContent(data, media_type=media_type)


def _reference(
    block: Mapping[str, Any],
    media: MediaSupport,
    reader: MediaReader,
    caller: Caller,
    sources: SourcePolicy,
) -> str | BinaryContent:
    uri = str(block.get("uri", ""))
    media_type = str(block.get("media_type", "application/octet-stream"))
    kind = _kind(media_type)
    if kind not in ("image", "audio"):
        return f"[resource {uri} ({media_type})]"
    outcome = reader.read(uri, caller, sources)
    if isinstance(outcome, str):
        return f"[{kind} {uri} is no longer available: {outcome}]"
    accepted = media.images if kind == "image" else media.audio
    if not accepted:
        return _marker(
            kind, media_type, len(outcome), f"from {uri}; this model does not take {kind} input"
        )
    from pydantic_ai.messages import BinaryContent

    return BinaryContent(outcome, media_type=media_type)


def result_content(
    result: Mapping[str, Any],
    media: MediaSupport,
    reader: MediaReader,
    caller: Caller,
    sources: SourcePolicy,
) -> tuple[ResultContent, bool]:
    """The model's view of a stored result, and whether it depends on files (re-read)."""
    content: ResultContent = []
    volatile = False
    for block in result.get("content", ()):
        kind = block.get("type")
        if kind == "text":
            content.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            content.append(_inline(block, media))
        elif kind == "resource":
            volatile = True
            content.append(_reference(block, media, reader, caller, sources))
    return content, volatile
