"""What remembering an approval's answer would add as permission rules, and storing it.

Below the runtime and the platform so that every surface that answers an approval (the
web card, a channel's button, the CLI, the HTTP API, an MCP client's pending answer)
proposes and remembers the same prefixes."""

from __future__ import annotations

from typing import Any, Literal

from corral.errors import UsageError
from corral.kernel.approvals import ApprovalRecord
from corral.kernel.command_rules import CommandRules
from corral.kernel.remembered_rules import RememberOutcome, Scope

__all__ = ["REMEMBER_KINDS", "Remember", "plan", "propose", "remember", "rememberable"]

Remember = Literal["exact", "family"]
REMEMBER_KINDS: tuple[Remember, ...] = ("exact", "family")


async def propose(
    rules: CommandRules, *, tool: str, arguments: dict[str, Any], user_id: str, agent: str
) -> dict[str, list[str]] | None:
    """What remembering the answer to a call would add, per command no rule allows yet:
    ``{"family": ["git log", "head"], "exact": [...]}``; None for a call that is not a
    command."""
    command = arguments.get("command")
    if tool != "execute" or not isinstance(command, str):
        return None
    from corral.shell.analysis import analyze  # its tables load with the first command
    from corral.shell.command_rules import judge_analysis

    current = await rules.for_call(user_id, agent)
    uncovered = judge_analysis(analyze(command), current).uncovered
    family = list(dict.fromkeys(" ".join(c.family) for c in uncovered))
    exact = list(dict.fromkeys(" ".join(w or "…" for w in c.words) for c in uncovered))
    return {"family": family, "exact": exact}


def rememberable(rules: CommandRules, record: ApprovalRecord) -> str:
    """The command of an approval that can be remembered; refuse any other."""
    command = record.arguments.get("command")
    if record.tool != "execute" or not isinstance(command, str):
        raise UsageError(
            f"only execute commands can be remembered; for {record.tool!r} write a "
            f"tool_rule in {rules.folder.folder}"
        )
    return command


async def plan(
    rules: CommandRules, record: ApprovalRecord, kind: Remember
) -> list[tuple[str, ...]]:
    """The prefixes remembering the answer to ``record`` would store: one per command no
    rule allows yet, its exact words or the family the analysis proposes. Refuses, before
    the approval is claimed, what cannot be remembered."""
    from corral.shell.analysis import analyze
    from corral.shell.command_rules import judge_analysis

    command = rememberable(rules, record)
    current = await rules.for_call(record.user_id, record.agent)
    judged = judge_analysis(analyze(command), current)
    patterns: list[tuple[str, ...]] = []
    for found in judged.uncovered:
        if kind == "family":
            pattern = found.family
        elif None in found.words:
            raise UsageError(
                f"{' '.join(w or '…' for w in found.words)!r} has words known only when it "
                "runs, so it cannot be remembered exactly; remember its family instead"
            )
        else:
            pattern = tuple(w for w in found.words if w is not None)
        if pattern not in patterns:
            patterns.append(pattern)
    return patterns


async def remember(
    rules: CommandRules,
    record: ApprovalRecord,
    patterns: list[tuple[str, ...]],
    *,
    approved: bool,
    scope: Scope,
    decided_by: str,
    note: str | None,
) -> list[RememberOutcome]:
    """Store the planned prefixes as rules of ``scope``: ``allow``, or for a denial
    ``forbidden`` with the person's note as the justification."""
    return [
        await rules.remembered.remember(
            pattern,
            decision="allow" if approved else "forbidden",
            scope=scope,
            user_id=record.user_id,
            agent=record.agent,
            created_by=decided_by,
            justification=note or "",
            approval_id=record.id,
        )
        for pattern in patterns
    ]
