"""Permission rule files: Codex's syntax parsed with ``ast`` (never evaluated), our TOML
spelling, inline examples as tests, and bad files named with file, line and reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.policy.command_rules import (
    PrefixRule,
    RuleError,
    RulesFolder,
    ToolRule,
    load_rule_file,
    parse_codex_rules,
    parse_toml_rules,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_codex_documented_example_loads_and_its_examples_pass() -> None:
    rules = load_rule_file(FIXTURES / "codex_example.rules")
    assert [r.show() for r in rules if isinstance(r, PrefixRule)] == [
        "git reset --hard",
        "ls",
        "cat",
        "cp",
        "head",
        "printenv",
        "pwd",
        "which",
        "gh pr view",
    ]
    by_name = {r.show(): r for r in rules if isinstance(r, PrefixRule)}
    assert by_name["git reset --hard"].decision == "forbidden"
    assert by_name["git reset --hard"].justification == "destructive operation"
    assert by_name["ls"].decision == "allow"  # Codex's default
    assert by_name["cp"].match == (("cp", "foo", "bar"), ("cp", "-r", "src", "dest"))
    assert not by_name["gh pr view"].matches(["gh", "pr", "--repo", "openai/codex", "view"])
    assert by_name["ls"].id == "codex_example.rules:14"


def test_alternatives_in_a_pattern() -> None:
    (rule,) = parse_codex_rules(
        'prefix_rule(pattern=["git", ["push", "fetch"]], decision="prompt",'
        ' match=[["git", "push", "origin", "main"], "git fetch"], not_match=["git status"])',
        file="alt.rules",
    )
    assert isinstance(rule, PrefixRule) and rule.show() == "git [push|fetch]"


def test_tool_rule_matches_argument_globs() -> None:
    (rule,) = parse_codex_rules(
        'tool_rule(tool="web_fetch", when={"url": "https://docs.python.org/*"})', file="t.rules"
    )
    assert isinstance(rule, ToolRule)
    assert rule.matches("web_fetch", {"url": "https://docs.python.org/3/library/ast.html"})
    assert not rule.matches("web_fetch", {"url": "https://evil.example/docs.python.org/"})
    assert not rule.matches("web_fetch", {})


def test_toml_spelling_of_the_same_fields() -> None:
    rules = parse_toml_rules(
        """
[[prefix_rule]]
pattern = ["git", ["log", "status"]]
justification = "read-only"
match = ["git log -5", ["git", "status"]]
not_match = ["git push"]

[[tool_rule]]
tool = "web_fetch"
when = { url = "https://docs.python.org/*" }
decision = "allow"
""",
        file="ours.toml",
    )
    assert [type(r).__name__ for r in rules] == ["PrefixRule", "ToolRule"]
    assert rules[0].origin.line == 2 and rules[1].origin.line == 8


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('prefix_rule(pattern=["ls"]', "bad.rules:1: syntax error"),
        ('\n\nprefix_rule(pattern=["ls"], decision="maybe")', "bad.rules:3: unknown decision"),
        ('prefix_rule(pattern=[], decision="allow")', "bad.rules:1: pattern must be a list"),
        (
            'prefix_rule(pattern=["git", "log"], match=["git status"])',
            "bad.rules:1: rule git log: the match example 'git status' does not match",
        ),
        (
            'prefix_rule(pattern=["git"], not_match=["git log"])',
            "the not_match example 'git log' matches its pattern",
        ),
        ('import os\nprefix_rule(pattern=["ls"])', "bad.rules:1: only prefix_rule(...)"),
        ('prefix_rule(pattern=["ls"] + ["x"])', "only strings, lists and dicts"),
        ('prefix_rule(pattern=[__import__("os").getcwd()])', "only strings, lists and dicts"),
        ('prefix_rule(patern=["ls"])', "prefix_rule() has no field 'patern'"),
        ("x = 1", "only prefix_rule(...), tool_rule(...) and host_executable(...) calls"),
        ('host_executable(name="git", paths=["bin/git"])', "must be absolute"),
    ],
)
def test_bad_codex_files_name_file_line_and_reason(text: str, reason: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_codex_rules(text, file="bad.rules")
    assert reason in str(caught.value)


def test_bad_toml_rule_names_its_line() -> None:
    with pytest.raises(RuleError, match=r"bad\.toml:4: pattern must be a list"):
        parse_toml_rules(
            '[[prefix_rule]]\npattern = ["ls"]\n\n[[prefix_rule]]\npattern = []\n', file="bad.toml"
        )
    with pytest.raises(RuleError, match=r"bad\.toml:1: TOML syntax error"):
        parse_toml_rules("[[prefix_rule]\n", file="bad.toml")


def _touch_later(path: Path, text: str) -> None:
    """Write ``text`` with a modification time the folder cannot mistake for the old one."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_folder_reloads_on_change_and_keeps_previous_rules_of_a_bad_file(tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    now = [0.0]
    rules_file = folder / "team.rules"
    _touch_later(rules_file, 'prefix_rule(pattern=["git", "status"])\n')
    loaded = RulesFolder(folder, clock=lambda: now[0])
    assert [r.id for r in loaded.rules.rules] == ["team.rules:1"]

    _touch_later(rules_file, 'prefix_rule(pattern=["git", "status"], decision="sometimes")\n')
    now[0] += 2
    assert [r.id for r in loaded.rules.rules] == ["team.rules:1"]  # the previous rules stay
    (problem,) = loaded.problems
    assert "team.rules:1: unknown decision 'sometimes'" in problem
    assert "previous rules stay in force" in problem

    _touch_later(rules_file, 'prefix_rule(pattern=["git", "log"])\n')
    now[0] += 0.5
    assert loaded.rules.rules[0].show() == "git status"  # looked at once a second at most
    now[0] += 1
    assert loaded.rules.rules[0].show() == "git log" and loaded.problems == []

    rules_file.unlink()
    now[0] += 2
    assert not loaded.rules


def test_a_bad_file_at_start_is_reported_and_the_others_load(tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "a.rules").write_text('prefix_rule(pattern=["ls"])\n')
    (folder / "b.toml").write_text("[[prefix_rule]]\npattern = ['rm']\ndecision = 'nope'\n")
    loaded = RulesFolder(folder)
    assert [r.show() for r in loaded.rules.rules] == ["ls"]
    assert loaded.problems == [
        f"{folder / 'b.toml'}:1: unknown decision 'nope'; use one of allow, prompt, forbidden"
    ]
