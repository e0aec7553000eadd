"""The drive's attachment reader: ``⟦fs:read:URI⟧`` in a person's message is that fs_read.

Each reference is resolved as the sender, through the same resolution and reading as fs_read
(source rights, owner-checked durable URIs, the private area denied), then stored with the
message: a text file's numbered lines up to :data:`TEXT_CAP` characters, an image or audio
file as a reference re-read under access when the prompt is built, a PDF's text, a binary
file's description.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from corral.kernel import Kernel
from corral.packages.drive.service import Drive
from corral.policy.identity import Caller
from corral.tools.results import TextBlock, ToolResult

__all__ = ["TEXT_CAP", "DriveAttachments"]

TEXT_CAP = 20_000
"""Characters of one attached text file inlined in the message."""


class DriveAttachments:
    """Reads a message's references for the runtime, as the message's sender."""

    def __init__(self, drive: Drive, kernel: Kernel) -> None:
        self._drive = drive
        self._kernel = kernel

    async def attach(self, uris: Sequence[str], caller: Caller) -> list[dict[str, Any]]:
        # fs_read's module (PDF pages, extraction) loads with the first attachment read.
        from corral.packages.drive.reading import read_location

        state = await self._kernel.config.dispatch_state()
        blocks: list[dict[str, Any]] = []
        for uri in uris:
            location = await self._drive.locator.locate(
                uri,
                caller=caller,
                access="read",
                sources=state.sources,
                shells=self._kernel.services.shells,
            )
            result = await asyncio.to_thread(
                read_location, location, live=state.live, budget=TEXT_CAP
            )
            labelled = ToolResult(
                content=[TextBlock(f"[attachment ⟦fs:read:{uri}⟧]"), *result.content]
            )
            blocks.extend(labelled.to_json()["content"])
        return blocks
