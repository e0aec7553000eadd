"""``/egress/hosts``: the hosts kept "for this agent" by answers to egress questions; a
person sees and removes their own, an admin (``admin.settings``) anyone's with ``user``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from corral.platform.egress_hosts import forget_kept_host, kept_hosts
from corral.server.deps import CallerDep, PlatformDep

router = APIRouter(prefix="/egress", tags=["egress"])


@router.get("/hosts")
async def list_kept_hosts(
    platform: PlatformDep,
    caller: CallerDep,
    agent: str | None = Query(default=None, description="Only this agent's (default: all)."),
    user: str | None = Query(default=None, description="This user's (admin; default: yours)."),
) -> dict[str, Any]:
    """Hosts your later calls through an agent reach without asking."""
    return {"hosts": await kept_hosts(platform, caller, user=user, agent=agent)}


@router.delete("/hosts/{host}")
async def remove_kept_host(
    host: str,
    platform: PlatformDep,
    caller: CallerDep,
    agent: str = Query(description="The agent the host was kept for."),
    user: str | None = Query(default=None, description="This user's (admin; default: yours)."),
) -> dict[str, Any]:
    """Stop allowing ``host`` through ``agent``: the next call that reaches it asks again."""
    return await forget_kept_host(platform, caller, host, agent=agent, user=user)
