"""Permission rules: list them, test a command against them, remove a remembered one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from corral.server.deps import CallerDep, PlatformDep

router = APIRouter(prefix="/rules", tags=["rules"])


class TestBody(BaseModel):
    command: str = Field(description="The bash command to judge; nothing runs.")
    agent: str = Field(default="default", description="Rules for calls through this agent.")
    cwd: str | None = Field(default=None, description="Working directory (data://…).")


@router.get("")
async def list_rules(platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    rules = await platform.rules.listing(caller)
    return {"rules": [r.to_json() for r in rules], "problems": platform.rules.problems()}


@router.post("/test")
async def test_command(body: TestBody, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    checked = await platform.rules.check(
        body.command, cwd=body.cwd, caller=caller, agent=body.agent
    )
    return checked.to_json()


@router.delete("/{rule_id}")
async def remove_rule(rule_id: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    await platform.rules.remove(rule_id, caller)
    return {"removed": rule_id}
