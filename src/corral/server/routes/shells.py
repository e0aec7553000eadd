"""Background shells: list, status, output and stop. Routes, not model tools.

Anyone who may read a shell's conversation may read its status and output; only the user
who started a shell may stop it (others get "not yours to stop").
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from corral.server.deps import CallerDep, PlatformDep
from corral.shell.service import ShellService

router = APIRouter(prefix="/shells", tags=["shells"])


@router.get("")
async def list_shells(
    platform: PlatformDep,
    caller: CallerDep,
    conversation_id: Annotated[str | None, Query(description="Only this conversation's")] = None,
    status: Annotated[str | None, Query(description="running, exited, stopped, lost…")] = None,
) -> dict[str, Any]:
    """Your shells, or every shell of a conversation you may read."""
    shells = platform.services.require(ShellService).background
    if conversation_id is None:
        records = await shells.store.find(user_id=caller.user_id, status=status)
    else:
        found = await shells.store.find(conversation_id=conversation_id, status=status)
        records = [r for r in found if await shells.can_read(r, caller)]
    return {"shells": [r.to_json() for r in records]}


@router.get("/{shell_id}")
async def shell_status(shell_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    record = await platform.services.require(ShellService).background.readable(shell_id, caller)
    return {**record.to_json(), "report": record.report}


@router.get("/{shell_id}/output")
async def shell_output(
    shell_id: str,
    platform: PlatformDep,
    caller: CallerDep,
    after: Annotated[int, Query(ge=0, description="Rows after this sequence number")] = 0,
    limit: Annotated[int, Query(ge=1, le=5000, description="Most rows returned")] = 500,
    wait: Annotated[
        float, Query(ge=0, le=30, description="Seconds to wait for new output (long poll)")
    ] = 0,
) -> dict[str, Any]:
    """Rows of the JSONL log (one per captured chunk) and, while it runs, the recent output."""
    background = platform.services.require(ShellService).background
    return await background.output(shell_id, caller, after=after, limit=limit, wait=wait)


@router.post("/{shell_id}/stop")
async def stop_shell(shell_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """End the shell's process group (SIGTERM, a grace, SIGKILL); its report follows."""
    record = await platform.services.require(ShellService).background.stop(shell_id, caller)
    return record.to_json()
