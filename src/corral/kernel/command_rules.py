"""The permission rules in force for a call: the project's rule files of
``<data_dir>/rules/`` joined with the rules people remembered for this user and agent."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.kernel.remembered_rules import RememberedRules
from corral.policy.command_rules import RuleSet, RulesFolder

__all__ = ["RULES_FOLDER", "CommandRules"]

RULES_FOLDER = "rules"
"""The folder of rule files under the data folder."""


class CommandRules:
    """Rule files and remembered rules, joined per (user, agent) and kept until one changes."""

    def __init__(self, folder: RulesFolder, remembered: RememberedRules) -> None:
        self.folder = folder
        self.remembered = remembered
        self._joined: dict[tuple[str, str], tuple[int, int, RuleSet]] = {}

    @classmethod
    def in_data_dir(
        cls, data_dir: Path, sessions: async_sessionmaker[AsyncSession]
    ) -> CommandRules:
        return cls(RulesFolder(data_dir / RULES_FOLDER), RememberedRules(sessions))

    def current(self, user_id: str, agent: str) -> RuleSet | None:
        """The rules of :meth:`for_call` without an await while neither source needs a look
        (every call passes here: a few hundred nanoseconds); None when one does."""
        if not (self.folder.is_fresh() and self.remembered.is_fresh()):
            return None
        cached = self._joined.get((user_id, agent))
        if cached is None or cached[:2] != (self.folder.generation, self.remembered.generation):
            return None
        return cached[2]

    async def for_call(self, user_id: str, agent: str) -> RuleSet:
        """The rule files' rules and those remembered for ``user_id`` through ``agent``."""
        files = self.folder.rules
        remembered = await self.remembered.rules_for(user_id, agent)
        joined = files + remembered if remembered else files
        if len(self._joined) > 256:
            self._joined.clear()
        generations = (self.folder.generation, self.remembered.generation)
        self._joined[(user_id, agent)] = (*generations, joined)
        return joined
