"""Attachments in a person's message: ``⟦fs:read:URI⟧`` references, expanded once, on arrival.

When a user message arrives, each reference is read as the *sender* (their source rights,
their shells and runs) by the attachment reader a package installs (the drive package does,
with the same reading as its fs_read). The expansion is stored with the message as content
blocks, like a tool result's: text inline up to a cap, images and audio from a source as a
reference that every prompt re-reads under the reader's access (real media for a model that
takes it, a marker otherwise). A reference the sender may not read refuses the message with
the reason, and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from corral.errors import ToolError, UsageError
from corral.policy.identity import Caller

__all__ = ["MAX_ATTACHMENTS", "REFERENCE", "AttachmentReader", "expand", "references"]

REFERENCE = re.compile(r"⟦fs:read:([^⟦⟧\n]{1,4096})⟧")
"""``⟦fs:read:data://notes/plan.md⟧``."""
MAX_ATTACHMENTS = 20


class AttachmentReader(Protocol):
    """Reads the files a message refers to, as its sender."""

    async def attach(self, uris: Sequence[str], caller: Caller) -> list[dict[str, Any]]:
        """Content blocks (``ToolResult.to_json`` form) for ``uris``; raises ToolError for a
        reference the caller may not read or that cannot be read."""
        ...


def references(text: str) -> list[str]:
    """The URIs a message refers to, in order, each once."""
    return list(dict.fromkeys(match.strip() for match in REFERENCE.findall(text)))


async def expand(
    text: str, caller: Caller, reader: AttachmentReader | None
) -> list[dict[str, Any]]:
    """The attachment blocks of a message (empty when it refers to nothing)."""
    uris = references(text)
    if not uris:
        return []
    if len(uris) > MAX_ATTACHMENTS:
        raise UsageError(
            f"a message may attach at most {MAX_ATTACHMENTS} files with ⟦fs:read:…⟧; it "
            f"refers to {len(uris)}"
        )
    if reader is None:
        raise UsageError(
            "⟦fs:read:…⟧ attachments need the drive package, which is not installed or "
            "failed to load (`corral tools list`); send the message without them"
        )
    try:
        return await reader.attach(uris, caller)
    except ToolError as err:
        raise UsageError(f"the message was not sent: {err.message}") from None
