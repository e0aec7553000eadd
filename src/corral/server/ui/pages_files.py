"""Images from the drive for tool cards: ``GET /ui/files?uri=…`` serves an image the
signed-in viewer may read (the same source rules as ``fs_read`` for that viewer).

An ``fs_read`` of a drive image returns a resource (its URI), not its bytes; the card shows
it through this route, so the page loads it from Corral itself and nothing else is fetched.
Only images are served: anything else is a 415, so a page can never be made to download
some other file through an ``<img>``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from corral.packages.drive.handles import open_verified
from corral.packages.drive.kinds import SNIFF_BYTES, sniff
from corral.packages.drive.locations import Location
from corral.packages.drive.reading import MAX_MEDIA_BYTES
from corral.packages.drive.service import Drive
from corral.server.ui.access import PageCaller, UiRoute

__all__ = ["router"]

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


@router.get("/files")
async def drive_image(who: PageCaller, uri: Annotated[str, Query()]) -> Response:
    drive = who.platform.services.get(Drive)
    if drive is None:
        raise HTTPException(404, "the drive package is not installed on this platform")
    snapshot = await who.platform.kernel.config.snapshot()
    location = await drive.locator.locate(
        uri,
        caller=who.caller,
        access="read",
        sources=snapshot.state.sources,
        shells=who.platform.services.shells,
    )
    media_type, body = await asyncio.to_thread(_image_bytes, location)
    return Response(body, media_type=media_type, headers={"Cache-Control": "private, no-store"})


def _image_bytes(location: Location) -> tuple[str, bytes]:
    if location.path is None or not location.path.is_file():
        raise HTTPException(404, f"{location.uri!r} is not a file")
    with open_verified(location.path) as handle:
        head = handle.read(SNIFF_BYTES)
        kind = sniff(head, location.path.name)
        if kind.kind != "image":
            raise HTTPException(415, f"{location.uri!r} is {kind.media_type}, not an image")
        rest = handle.read(MAX_MEDIA_BYTES + 1 - len(head))
    if len(head) + len(rest) > MAX_MEDIA_BYTES:
        raise HTTPException(413, f"{location.uri!r} is too large to show")
    return kind.media_type, head + rest
