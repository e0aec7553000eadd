"""Rule files in Codex's syntax (``*.rules``): ``prefix_rule(...)``, ``host_executable(...)``
and our ``tool_rule(...)`` calls, one after another.

The syntax is a subset of Python (Starlark), so the file is parsed with :mod:`ast` and
never evaluated: every statement must be one of those calls with keyword arguments whose
values are strings, lists of strings (or of lists of strings) and, for ``when``, a dict of
strings. Anything else is refused with the file, the line and what was wrong.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from corral.policy.command_rules.fields import (
    host_executable_from,
    prefix_rule_from,
    tool_rule_from,
)
from corral.policy.command_rules.model import (
    HostExecutable,
    PrefixRule,
    RuleError,
    RuleOrigin,
    ToolRule,
)

__all__ = ["parse_codex_rules"]

_CALLS = ("prefix_rule", "tool_rule", "host_executable")
_BUILDERS: dict[
    str, Callable[[Mapping[str, Any], RuleOrigin], PrefixRule | ToolRule | HostExecutable]
] = {
    "prefix_rule": prefix_rule_from,
    "tool_rule": tool_rule_from,
    "host_executable": host_executable_from,
}


def parse_codex_rules(text: str, *, file: str) -> list[PrefixRule | ToolRule | HostExecutable]:
    """Every rule of a ``.rules`` file, its inline examples checked; :class:`RuleError`
    naming ``file:line`` and the reason otherwise."""
    try:
        tree = ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise RuleError(f"{file}:{exc.lineno}: syntax error: {exc.msg}") from None
    rules: list[PrefixRule | ToolRule | HostExecutable] = []
    for statement in tree.body:
        line = statement.lineno
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in _CALLS
        ):
            raise RuleError(
                f"{file}:{line}: only prefix_rule(...), tool_rule(...) and "
                "host_executable(...) calls may stand in a rules file"
            )
        if call.args:
            raise RuleError(
                f"{file}:{line}: {call.func.id}() takes keyword arguments only "
                "(pattern=..., decision=...)"
            )
        fields: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                raise RuleError(f"{file}:{line}: **arguments are not allowed in a rules file")
            fields[keyword.arg] = _literal(keyword.value, file)
        origin = RuleOrigin(file=file, line=line)
        try:
            rules.append(_BUILDERS[call.func.id](fields, origin))
        except RuleError as exc:
            raise RuleError(f"{file}:{line}: {exc}") from None
    return rules


def _literal(node: ast.expr, file: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item, file) for item in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise RuleError(f"{file}:{node.lineno}: dict keys must be strings")
            out[key.value] = _literal(value, file)
        return out
    raise RuleError(
        f"{file}:{node.lineno}: only strings, lists and dicts of strings are allowed here, "
        f"not {ast.unparse(node)!r}"
    )
