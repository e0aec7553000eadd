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
        self._joined: dict[tuple[str, str], tuple[RuleSet, RuleSet, RuleSet]] = {}

    @classmethod
    def in_data_dir(
        cls, data_dir: Path, sessions: async_sessionmaker[AsyncSession]
    ) -> CommandRules:
        return cls(RulesFolder(data_dir / RULES_FOLDER), RememberedRules(sessions))

    async def for_call(self, user_id: str, agent: str) -> RuleSet:
        files = self.folder.rules
        remembered = await self.remembered.rules_for(user_id, agent)
        key = (user_id, agent)
        cached = self._joined.get(key)
        if cached is not None and cached[0] is files and cached[1] is remembered:
            return cached[2]
        joined = files + remembered if remembered else files
        if len(self._joined) > 256:
            self._joined.clear()
        self._joined[key] = (files, remembered, joined)
        return joined
