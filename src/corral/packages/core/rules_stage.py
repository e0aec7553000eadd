"""The pipeline's ``rules`` stage: permission rules decide whether a call asks a person.

Placed right before ``approval``, after ``execute``'s policy step has analysed the command
(:class:`~corral.packages.core.execute.CheckedShellCall`): each command the analysis found
is held against the prefix rules, never the command text (a rule for ``npm test`` does not
let ``npm test; curl …`` through). Other tools are held against tool rules on their
arguments. ``forbidden`` refuses with the rule's justification (an approved call too);
``prompt`` asks even where the profile would not; ``allow`` runs the call without asking,
only when every command is allowed, and never against an operator hook that asks. A rule
changes nothing else: the profile's and the URI policy's refusals came before it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.errors import Refusal
from corral.kernel.command_rules import CommandRules
from corral.policy.command_rules import Decision, RuleSet, ToolRule, strictest
from corral.tools.call import ToolCall
from corral.tools.results import ToolResult
from corral.tools.stage_approval import ApprovalAdvice
from corral.tools.stages import Next, StageContribution

if TYPE_CHECKING:
    from corral.shell.command_rules import Resolver, RulesJudgement

__all__ = ["CallRules", "RulesStage", "judge_call", "rules_stage"]

EXECUTE = "execute"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRules:
    """What the rules said about one call (kept on ``call.findings``)."""

    decision: Decision | None
    reason: str
    commands: RulesJudgement | None = None


def judge_call(call: ToolCall, rules: RuleSet, *, which: Resolver = shutil.which) -> CallRules:
    """The rules' decision on ``call``; ``None`` leaves it to the profile."""
    tool_rules = rules.matching_tool(call.tool.name, call.arguments)
    reasons = {rule.decision: _tool_reason(rule) for rule in reversed(tool_rules)}
    decisions: list[Decision] = [rule.decision for rule in tool_rules]
    judgement: RulesJudgement | None = None
    if call.tool.name == EXECUTE:
        # execute's own module (and the shell family behind it) is loaded by its first call,
        # not by this stage's import at every open.
        from corral.packages.core.execute import CheckedShellCall
        from corral.shell.command_rules import judge_analysis

        # A glob on the command text cannot see what the script runs: it may ask or refuse,
        # only the per-command rules allow.
        decisions = [d for d in decisions if d != "allow"]
        checked = call.findings.get(CheckedShellCall)
        analysis = checked.checked.analysis if checked is not None else None
        if analysis is not None:
            judgement = judge_analysis(analysis, rules, which=which)
            if judgement.decision != "unmatched":
                decisions.append(judgement.decision)
                reasons.setdefault(judgement.decision, judgement.reason())
    decision = strictest(decisions)
    reason = reasons.get(decision, "") if decision is not None else ""
    return CallRules(decision=decision, reason=reason, commands=judgement)


class RulesStage:
    name = "rules"

    def __init__(self, rules: CommandRules, *, which: Resolver = shutil.which) -> None:
        self._rules = rules
        self._which = which

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        if not isinstance(call.arguments, dict):
            return await next(call)
        request = call.request
        user_id, agent = request.caller.user_id, request.agent
        rules = self._rules.current(user_id, agent)
        if rules is None:
            rules = await self._rules.for_call(user_id, agent)
        if not rules:
            return await next(call)
        found = judge_call(call, rules, which=self._which)
        call.findings.put(found)
        if found.decision == "forbidden":
            raise Refusal(
                f"Refused by a permission rule: {found.reason}. The call did not run; "
                "do something else or ask the person to change the rule",
                code="rule_forbidden",
            )
        if call.approved or found.decision is None:
            return await next(call)
        advice = call.findings.get(ApprovalAdvice)
        if found.decision == "prompt":
            call.findings.put(ApprovalAdvice("ask", found.reason))
        elif advice is None or advice.decision == "allow":
            call.findings.put(ApprovalAdvice("allow", found.reason))
        return await next(call)


def rules_stage(rules: CommandRules) -> StageContribution:
    """The stage, placed right before ``approval``."""
    return StageContribution(RulesStage(rules), before="approval")


def _tool_reason(rule: ToolRule) -> str:
    why = f": {rule.justification}" if rule.justification else ""
    return f"rule {rule.show()} ({rule.origin.describe()}) says {rule.decision}{why}"
