"""Hook configuration: Claude Code's object accepted as written, every mistake named by path."""

from __future__ import annotations

from typing import Any

import pytest

from corral.errors import ConfigError
from corral.runtime.hooks import parse_hooks_config
from corral.runtime.hooks.matchers import compile_matcher, tool_names


def parse(value: Any) -> Any:
    return parse_hooks_config(value, source="hooks.json")


def test_claude_code_settings_object_is_accepted_whole_or_inner() -> None:
    inner = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "a.sh", "timeout": 30}]}
        ],
        "Stop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/stop"}]}],
    }
    whole = parse({"hooks": inner})
    assert whole == parse(inner)
    pre, stop = whole.groups
    assert (pre.event, pre.matcher.text, pre.handlers[0].timeout_s) == ("PreToolUse", "Bash", 30)
    assert pre.handlers[0].on_error == "block"  # a guard that fails must not let a call through
    assert stop.handlers[0].kind == "http" and stop.handlers[0].on_error == "allow"
    assert stop.handlers[0].timeout_s == 60


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"PreToolUses": []}, "hooks.PreToolUses is not a hook event"),
        ({"PreToolUse": {}}, "hooks.PreToolUse must be a list"),
        ({"PreToolUse": [{"hooks": []}]}, "hooks.PreToolUse[0].hooks must be a non-empty list"),
        (
            {"PreToolUse": [{"hooks": [{"type": "command", "command": "a"}, {"type": "prompt"}]}]},
            "hooks.PreToolUse[0].hooks[1].type must be 'command' or 'http'",
        ),
        (
            {
                "PreToolUse": [
                    {"hooks": [{"type": "command", "command": "a"}, {"type": "command",
                                "command": "b", "timeout": "30"}]}
                ]
            },
            "hooks.PreToolUse[0].hooks[1].timeout must be a number of seconds",
        ),
        (
            {"Stop": [{"hooks": [{"type": "command", "command": "a", "on_error": "maybe"}]}]},
            "hooks.Stop[0].hooks[0].on_error must be 'block' or 'allow'",
        ),
        (
            {"Stop": [{"hooks": [{"type": "http", "url": "ftp://x/"}]}]},
            "hooks.Stop[0].hooks[0].url must be an http:// or https:// URL",
        ),
        (
            {"Stop": [{"hooks": [{"type": "http", "url": "http://x/", "headers": {"a": 1}}]}]},
            "hooks.Stop[0].hooks[0].headers must be an object of text values",
        ),
        ({"PreToolUse": [{"matcher": 3, "hooks": []}]}, "hooks.PreToolUse[0].matcher must be"),
        ([], "hooks must be a JSON object"),
        ({"hooks": {}, "permissions": {}}, "unknown key 'permissions'"),
    ],
)  # fmt: skip
def test_mistakes_are_refused_with_the_path_at_fault(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=r"^hooks\.json: ") as caught:
        parse(value)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("matcher", "reason"),
    [
        ("mcp__memory", "names an MCP server, not a tool"),
        ("Bash|mcp__github", "names an MCP server, not a tool"),
        ("mcp__memory__", "names an MCP server, not a tool"),
        ("Edit(", "is not a valid regular expression"),
    ],
)
def test_a_matcher_that_can_never_match_is_refused(matcher: str, reason: str) -> None:
    value = {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": "a"}]}]}
    with pytest.raises(ConfigError) as caught:
        parse(value)
    assert f"hooks.PreToolUse[0].matcher {matcher!r}" in str(caught.value)
    assert reason in str(caught.value)


def test_matchers_read_as_claude_code_reads_them() -> None:
    def hits(matcher: str, tool: str, package: str | None = None) -> bool:
        return compile_matcher(matcher, event="PreToolUse").matches(
            tool_names(tool, package=package)
        )

    assert hits("", "execute") and hits("*", "fs_write")
    assert hits("Bash", "execute") and hits("execute", "execute")
    assert hits("Edit|Write", "fs_write") and hits("Edit|Write", "fs_edit")
    assert not hits("Edit|Write", "fs_read")
    assert not hits("Bas", "execute")  # a plain name is exact
    assert hits("^fs_", "fs_read") and hits("Web.*", "web_fetch")
    assert hits("Notebook|Read", "fs_read")
    assert hits("mcp__memory__.*", "memory_create_entities", "mcp:memory")
    assert hits("mcp__memory__create_entities", "memory_create_entities", "mcp:memory")
    assert not hits("mcp__memory__.*", "github_search", "mcp:github")
    assert hits("Task", "delegate") and hits("TodoWrite", "todos")
