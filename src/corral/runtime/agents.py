"""Agents as the loop uses them: instructions, model, profile, step budget.

Tool selection lives with the dispatch pipeline (it narrows what every caller sees); the
rest is read here, once per run step, so a change applies to the next step.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound
from corral.policy.profiles import Profile, parse_profile
from corral.store import tables as t

__all__ = ["AgentConfig", "load_agent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    name: str
    instructions: str
    model: str | None
    profile: Profile
    step_budget: int | None
    pinned_tools: tuple[str, ...] = ()
    """Tools given in full every step, never deferred by tool_search."""


async def load_agent(sessions: async_sessionmaker[AsyncSession], name: str) -> AgentConfig:
    async with sessions() as session:
        row = await session.get(t.Agent, name)
    if row is None:
        raise NotFound(f"no agent {name!r}; `corral agents list` shows them")
    return AgentConfig(
        name=row.name,
        instructions=row.instructions,
        model=row.model,
        profile=parse_profile(row.profile),
        step_budget=row.step_budget,
        pinned_tools=tuple(row.pinned_tools or ()),
    )
