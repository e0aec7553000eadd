"""Live settings."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.server.deps import PERSON_ONLY, CallerDep, PlatformDep, require_feature

router = APIRouter(prefix="/settings", tags=["settings"])


class LiveValue(BaseModel):
    value: Any = Field(description="New value of the live setting.")


@router.get("/live")
async def live(platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """The live settings: an administrator's view (limits, deny lists, provider choices)."""
    require_feature(caller, "admin.settings")
    return await platform.live_settings()


@router.put("/live/{key}", dependencies=[PERSON_ONLY])
async def set_live(
    key: str, body: LiveValue, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    require_feature(caller, "admin.settings")
    value = await platform.admin.set_live(key, body.value, by=caller.user_id)
    return {"key": key, "value": value}
