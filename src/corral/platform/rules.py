"""Permission rules at the platform's surface: judge a command with them (``corral
check-command``, ``corral rules test``), list and remove them, and remember a rule from an
approval's answer (approve or deny, the exact command or its family, for an agent, all of a
person's agents or, for an admin, the whole project)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.errors import NotFound, UsageError
from corral.kernel import ApprovalRecord, Kernel, rule_proposals
from corral.kernel.remembered_rules import SCOPES, RememberOutcome, Scope
from corral.kernel.rule_proposals import REMEMBER_KINDS, Remember
from corral.policy.command_rules import PrefixRule, ToolRule
from corral.policy.identity import Caller

if TYPE_CHECKING:
    from corral.shell.command_rules import RulesJudgement
    from corral.shell.verdict import Verdict

__all__ = ["REMEMBER_KINDS", "CommandCheck", "PlatformRules", "Remember"]

_ADMIN_FEATURE = "admin.settings"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandCheck:
    """The verdict of the guards on a command and, when it may run, the rules' decisions."""

    verdict: Verdict
    rules: RulesJudgement | None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.verdict.to_json(),
            "rules": self.rules.to_json() if self.rules is not None else None,
        }


class PlatformRules:
    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._rules = kernel.command_rules

    def problems(self) -> list[str]:
        """Rule files that could not be used: file, line and reason."""
        self._rules.folder.refresh(force=True)
        return self._rules.folder.problems

    async def check(
        self, command: str, *, cwd: str | None = None, caller: Caller, agent: str
    ) -> CommandCheck:
        """Judge ``command`` as ``execute`` would, the rules included; nothing runs."""
        shells = self._kernel.services.shells
        if shells is None:
            raise UsageError("shell execution is not installed on this platform")
        checked = await shells.check(command, cwd=cwd, caller=caller)
        if not checked.verdict.allowed or checked.analysis is None:
            return CommandCheck(verdict=checked.verdict, rules=None)
        from corral.shell.command_rules import judge_analysis  # with the first command checked

        rules = await self._rules.for_call(caller.user_id, agent)
        return CommandCheck(verdict=checked.verdict, rules=judge_analysis(checked.analysis, rules))

    async def listing(self, caller: Caller) -> list[PrefixRule | ToolRule]:
        """The rule files' rules and the remembered rules ``caller`` may see (all of them for
        an admin)."""
        self._rules.folder.refresh(force=True)
        everyone = caller.grants.has(_ADMIN_FEATURE)
        remembered = await self._rules.remembered.listing(
            user_id=None if everyone else caller.user_id
        )
        return [*self._rules.folder.rules.rules, *remembered]

    async def remove(self, rule_id: str, caller: Caller) -> None:
        """Remove a remembered rule (one's own; an admin any). A rule file's rule is removed
        by editing its file."""
        if self._rules.folder.rules.find(rule_id) is not None:
            raise UsageError(
                f"rule {rule_id!r} comes from a rule file in {self._rules.folder.folder}; "
                "remove it by editing that file"
            )
        mine = await self._rules.remembered.listing(user_id=caller.user_id)
        found = next((r for r in mine if r.id == rule_id), None)
        if found is None:
            raise NotFound(f"no remembered rule {rule_id!r}; `corral rules list` shows them")
        if found.origin.scope == "project" and not caller.grants.has(_ADMIN_FEATURE):
            raise UsageError(f"rule {rule_id!r} is the project's; only an admin may remove it")
        await self._rules.remembered.remove(rule_id)

    @staticmethod
    def check_choice(remember: str | None, scope: str, caller: Caller) -> None:
        """Refuse a remember choice before the approval is claimed."""
        if remember is None:
            return
        if remember not in REMEMBER_KINDS:
            raise UsageError(f"remember must be 'exact' or 'family', not {remember!r}")
        if scope not in SCOPES:
            raise UsageError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if scope == "project" and not caller.grants.has(_ADMIN_FEATURE):
            raise UsageError(
                "only an admin may remember a rule for the whole project; choose scope "
                "'agent' or 'user'"
            )

    def check_record(self, record: ApprovalRecord) -> str:
        """The command of an approval that can be remembered; refuse any other."""
        return rule_proposals.rememberable(self._rules, record)

    async def proposal(self, record: ApprovalRecord) -> dict[str, list[str]] | None:
        """What remembering ``record``'s answer would add, per command no rule allows yet:
        ``{"family": ["git log", "head"], "exact": [...]}``; None for a call that is not a
        command."""
        return await rule_proposals.propose(
            self._rules,
            tool=record.tool,
            arguments=record.arguments,
            user_id=record.user_id,
            agent=record.agent,
        )

    async def plan(self, record: ApprovalRecord, remember: Remember) -> list[tuple[str, ...]]:
        """The prefixes remembering the answer to ``record`` would store (see
        :func:`corral.kernel.rule_proposals.plan`)."""
        return await rule_proposals.plan(self._rules, record, remember)

    async def remember(
        self,
        record: ApprovalRecord,
        patterns: list[tuple[str, ...]],
        *,
        approved: bool,
        scope: Scope,
        decider: Caller,
        note: str | None,
    ) -> list[RememberOutcome]:
        """Store the planned prefixes as rules of ``scope``: ``allow``, or for a denial
        ``forbidden`` with the person's note as the justification."""
        return await rule_proposals.remember(
            self._rules,
            record,
            patterns,
            approved=approved,
            scope=scope,
            decided_by=decider.name,
            note=note,
        )
