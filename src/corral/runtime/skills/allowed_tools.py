"""``allowed-tools``: the tools a run keeps while a skill that declares them is active.

Entries name Corral tools (``fs_read``, an MCP server's ``github.create_issue``…) or Claude
Code's tools, which are mapped to Corral's (``Bash`` → ``execute``, ``Read`` → ``fs_read``…);
Claude Code's argument patterns (``Bash(git add:*)``) narrow nothing finer here, the tool is
kept whole and every call still takes the policy and approval stages. ``execute`` is always
kept: it activates skills and runs their scripts. Several active skills narrow in turn (the
intersection), as any narrowing does.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.runtime.runs import RunRecord
from corral.tools.narrowing import Narrowing
from corral.tools.services import Services

__all__ = ["CLAUDE_CODE_TOOLS", "narrowing_of", "run_narrowing", "tool_names"]

CLAUDE_CODE_TOOLS: dict[str, tuple[str, ...]] = {
    "Bash": ("execute",),
    "Read": ("fs_read",),
    "Write": ("fs_write",),
    "Edit": ("fs_edit",),
    "MultiEdit": ("fs_edit",),
    "NotebookEdit": ("fs_edit",),
    "Glob": ("fs_list",),
    "LS": ("fs_list",),
    "Grep": ("fs_search",),
    "WebFetch": ("web_fetch",),
    "WebSearch": ("web_search",),
    "TodoWrite": ("todos",),
    "Task": ("delegate",),
    "AskUserQuestion": ("ask_question",),
}
"""Claude Code's tool names and the Corral tools that do their work."""

_ALWAYS = frozenset({"execute"})


def tool_names(entries: Iterable[str]) -> frozenset[str]:
    """The Corral tools ``allowed-tools`` entries name, ``execute`` included."""
    names = set(_ALWAYS)
    for entry in entries:
        base = entry.split("(", 1)[0].strip()
        names.update(CLAUDE_CODE_TOOLS.get(base, (base,)))
    return frozenset(names)


def narrowing_of(declared: Iterable[tuple[str, ...]]) -> Narrowing:
    """The narrowing of the active skills' ``allowed-tools`` (a skill without any: none)."""
    found = Narrowing()
    for entries in declared:
        if entries:
            found = Narrowing(tools=tool_names(entries)).within(found)
    return found


def run_narrowing(services: Services, run: RunRecord) -> Narrowing:
    """The run's own narrowing, within what its active skills' ``allowed-tools`` leave."""
    if services.skills is None:
        return run.narrowing
    return services.skills.narrowing(run.id).within(run.narrowing)
