"""Rule files in our TOML spelling (``*.toml``): the same fields as Codex's calls::

[[prefix_rule]]
pattern = ["git", ["log", "status"]]
decision = "allow"
match = ["git log -5"]

[[tool_rule]]
tool = "web_fetch"
when = { url = "https://docs.python.org/*" }
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from corral.policy.command_rules.fields import prefix_rule_from, tool_rule_from
from corral.policy.command_rules.model import (
    HostExecutable,
    PrefixRule,
    RuleError,
    RuleOrigin,
    ToolRule,
)

__all__ = ["parse_toml_rules"]


def parse_toml_rules(text: str, *, file: str) -> list[PrefixRule | ToolRule | HostExecutable]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        where = f"{file}:{found.group(1)}" if found else file
        raise RuleError(f"{where}: TOML syntax error: {exc}") from None
    rules: list[PrefixRule | ToolRule | HostExecutable] = []
    for key in document:
        if key not in ("prefix_rule", "tool_rule"):
            raise RuleError(f"{file}: unknown table {key!r}; use [[prefix_rule]] or [[tool_rule]]")
    lines = _table_lines(text)
    for kind, build in (("prefix_rule", prefix_rule_from), ("tool_rule", tool_rule_from)):
        entries: Any = document.get(kind, [])
        if not isinstance(entries, list):
            raise RuleError(f"{file}: {kind} must be an array of tables: [[{kind}]]")
        for index, entry in enumerate(entries):
            line = lines[kind][index] if index < len(lines[kind]) else None
            where = f"{file}:{line}" if line else file
            if not isinstance(entry, dict):
                raise RuleError(f"{where}: each [[{kind}]] must be a table")
            try:
                rules.append(build(entry, RuleOrigin(file=file, line=line)))
            except RuleError as exc:
                raise RuleError(f"{where}: {exc}") from None
    return rules


def _table_lines(text: str) -> dict[str, list[int]]:
    """The line of each ``[[prefix_rule]]`` / ``[[tool_rule]]`` header, in order."""
    found: dict[str, list[int]] = {"prefix_rule": [], "tool_rule": []}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip().replace(" ", "")
        for kind in found:
            if stripped.startswith(f"[[{kind}]]"):
                found[kind].append(number)
    return found
