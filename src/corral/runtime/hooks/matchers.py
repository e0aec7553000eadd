"""Hook matchers, read as Claude Code reads them, and the names a tool answers to.

A matcher that is empty or ``*`` matches everything. One made only of letters, digits,
``_`` and ``|`` is a list of exact names (``Bash``, ``Edit|Write``). Anything else is a
regular expression searched anywhere in the name, unanchored as in Claude Code
(``^Notebook`` anchors at the start, ``mcp__memory__.*`` matches a server's every tool).

Tool events match the tool's names: its Corral name (``execute``), the Claude Code names of
its equivalent (``Bash``; see :data:`CLAUDE_CODE_TOOLS`) and, for a tool of a connected MCP
server, ``mcp__<server>__<tool>``. A matcher that can never match (a bare MCP server prefix
such as ``mcp__memory``, a regular expression that does not compile) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "MATCHER_FIELDS",
    "TOOL_EVENTS",
    "Matcher",
    "compile_matcher",
    "mcp_hook_name",
    "tool_names",
]

CLAUDE_CODE_TOOLS: dict[str, str] = {
    "Bash": "execute",
    "Write": "fs_write",
    "Edit": "fs_edit",
    "MultiEdit": "fs_edit",
    "Read": "fs_read",
    "Glob": "fs_list",
    "LS": "fs_list",
    "Grep": "fs_search",
    "WebFetch": "web_fetch",
    "WebSearch": "web_search",
    "Task": "delegate",
    "Agent": "delegate",
    "TodoWrite": "todos",
    "AskUserQuestion": "ask_question",
}
"""Claude Code's tool names and the Corral tool each stands for in a matcher."""

_ALIASES: dict[str, tuple[str, ...]] = {}
for _claude, _corral in CLAUDE_CODE_TOOLS.items():
    _ALIASES[_corral] = (*_ALIASES.get(_corral, ()), _claude)

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
MATCHER_FIELDS: dict[str, str | None] = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "PermissionRequest": "tool_name",
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "Notification": "notification_type",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "UserPromptSubmit": None,
    "Stop": None,
}
"""The input field each event's matcher is held against (None: the matcher is ignored and
every group runs, as in Claude Code)."""

_PLAIN = re.compile(r"^[A-Za-z0-9_|]+$")


@dataclass(frozen=True, slots=True)
class Matcher:
    """A compiled matcher; ``text`` is what the operator wrote."""

    text: str
    names: frozenset[str] | None = None
    """Exact names (a plain matcher), or None."""
    pattern: re.Pattern[str] | None = None
    """The regular expression (any other matcher), or None."""

    @property
    def matches_all(self) -> bool:
        return self.names is None and self.pattern is None

    def matches(self, candidates: Iterable[str]) -> bool:
        if self.names is not None:
            return any(name in self.names for name in candidates)
        if self.pattern is not None:
            return any(self.pattern.search(name) for name in candidates)
        return True


def compile_matcher(text: str, *, event: str) -> Matcher:
    """``text`` as a :class:`Matcher`; ``ValueError`` (its message completes a sentence
    starting with the matcher) when it can never match anything."""
    if text in ("", "*"):
        return Matcher(text)
    if _PLAIN.match(text):
        names = frozenset(part for part in text.split("|") if part)
        if not names:
            raise ValueError("names no tool; use '*' or leave it empty to match every call")
        if event in TOOL_EVENTS:
            for name in sorted(names):
                server, _, tool = name.removeprefix("mcp__").partition("__")
                if name.startswith("mcp__") and not (server and tool):
                    raise ValueError(
                        f"can never match: {name!r} names an MCP server, not a tool (tools "
                        f"are named mcp__<server>__<tool>); write '{name}__.*' for every "
                        "tool of that server"
                    )
        return Matcher(text, names=names)
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise ValueError(f"is not a valid regular expression ({exc})") from None
    return Matcher(text, pattern=pattern)


def mcp_hook_name(server: str, corral_name: str) -> str:
    """A connected MCP server's tool as Claude Code names it: ``mcp__<server>__<tool>``.

    Corral names the tool ``<server>_<tool>`` (lower case, other characters as ``_``); the
    tool part is what follows the server's prefix."""
    prefix = re.sub(r"[^a-z0-9_]+", "_", server.lower()) + "_"
    tool = corral_name[len(prefix) :] if corral_name.startswith(prefix) else corral_name
    return f"mcp__{server}__{tool}"


def tool_names(corral_name: str, *, package: str | None = None) -> tuple[str, ...]:
    """Every name a matcher may use for the tool ``corral_name`` of ``package``."""
    if package is not None and package.startswith("mcp:"):
        return (mcp_hook_name(package[len("mcp:") :], corral_name), corral_name)
    return (corral_name, *_ALIASES.get(corral_name, ()))
