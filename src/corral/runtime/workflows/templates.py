"""Workflow templates: a named starting setup, and whether its goal may evolve.

A template holds the fields a workflow's ``set`` takes; creating a workflow from it checks
them exactly as ``set`` does. ``evolve: "agent"`` lifts the lock on the goal a workflow from
the template sets: the agent may then clear or replace it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound, UsageError
from corral.runtime.workflows.setup import EDITABLE
from corral.store import workflow_tables as wt

__all__ = ["Template", "TemplateStore"]

NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True, kw_only=True)
class Template:
    name: str
    description: str
    setup: dict[str, Any]
    evolve: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "setup": self.setup,
            "evolve": self.evolve,
        }


class TemplateStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def save(
        self,
        name: str,
        setup: Mapping[str, Any],
        *,
        by: str,
        description: str = "",
        evolve: str | None = None,
    ) -> Template:
        """Create or replace template ``name``."""
        if not name or not set(name) <= NAME_CHARS or len(name) > 100:
            raise UsageError(
                f"template name {name!r} may hold lower-case letters, digits, '-' and '_' only"
            )
        if evolve not in (None, "agent"):
            raise UsageError(f"evolve may only be 'agent' (or absent), not {evolve!r}")
        unknown = sorted(set(setup) - set(EDITABLE))
        if unknown:
            raise UsageError(
                f"a template holds workflow fields only; not {', '.join(map(repr, unknown))}"
            )
        async with self._sessions.begin() as session:
            row = await session.get(wt.WorkflowTemplate, name)
            if row is None:
                row = wt.WorkflowTemplate(name=name, created_by=by, setup={})
                session.add(row)
            row.setup, row.description, row.evolve = dict(setup), description, evolve
        return Template(name=name, description=description, setup=dict(setup), evolve=evolve)

    async def get(self, name: str) -> Template:
        async with self._sessions() as session:
            row = await session.get(wt.WorkflowTemplate, name)
        if row is None:
            raise NotFound(
                f"no workflow template {name!r}; `corral workflows templates` lists them"
            )
        return Template(
            name=row.name, description=row.description, setup=row.setup, evolve=row.evolve
        )

    async def list_templates(self) -> list[Template]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(wt.WorkflowTemplate).order_by(wt.WorkflowTemplate.name)
            )
            return [
                Template(name=r.name, description=r.description, setup=r.setup, evolve=r.evolve)
                for r in rows
            ]

    async def remove(self, name: str) -> None:
        await self.get(name)
        async with self._sessions.begin() as session:
            await session.execute(
                delete(wt.WorkflowTemplate).where(wt.WorkflowTemplate.name == name)
            )
