"""Permission rules held against what the analysis found: a corpus of compound commands,
each with the decision the rules reach, and the proposals approve-and-remember makes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from corral.policy.command_rules import RuleSet, load_rule_file, parse_codex_rules
from corral.shell.analysis import Analysis, Command, Word, analyze
from corral.shell.command_rules import family_of, judge_analysis

HERE = Path(__file__).parent / "rules"
RULES = RuleSet(load_rule_file(HERE / "corpus.rules"))
CASES = tomllib.loads((HERE / "corpus.toml").read_text())["case"]


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert {case["expect"] for case in CASES} == {
        "allow",
        "prompt",
        "forbidden",
        "unmatched",
        "refused",
    }


@pytest.mark.parametrize("case", CASES, ids=[c["command"][:40] for c in CASES])
def test_corpus_decision(case: dict[str, str]) -> None:
    analysis = analyze(case["command"])
    decision = judge_analysis(analysis, RULES).decision if analysis.allowed else "refused"
    assert decision == case["expect"], case.get("why", "")


def test_the_reason_names_the_rule_the_file_and_the_command() -> None:
    judged = judge_analysis(analyze("git status && rm -rf build"), RULES)
    assert judged.decision == "forbidden"
    reason = judged.reason()
    assert "rule 'rm [-rf|-fr|-r]'" in reason and "corpus.rules:" in reason
    assert "'rm -rf build'" in reason and "remove the files one by one" in reason


@pytest.mark.parametrize(
    ("command", "families"),
    [
        ("git -C repo log --oneline -5 | head", [("git", "log"), ("head",)]),
        ("cd x && git status && git log -5 | head", [("git", "status"), ("git", "log"), ("head",)]),
        ("npm --prefix web test", [("npm", "test")]),
        ("ls -la | sort", [("ls",), ("sort",)]),
        ("find . -type f | xargs wc -l", [("find",), ("wc",)]),
    ],
)
def test_family_proposed_for_each_command(command: str, families: list[tuple[str, ...]]) -> None:
    analysis = analyze(command)
    assert [family_of(c) for c in analysis.commands] == families


def test_an_absolute_path_matches_only_the_same_program() -> None:
    rules = RuleSet(parse_codex_rules('prefix_rule(pattern=["git"])', file="g.rules"))
    same = judge_analysis(analyze("/usr/bin/git status"), rules, which=lambda _: "/usr/bin/git")
    other = judge_analysis(analyze("/opt/evil/git status"), rules, which=lambda _: "/usr/bin/git")
    assert same.decision == "allow" and other.decision == "unmatched"


def test_host_executable_lists_the_paths_a_name_may_be_written_as() -> None:
    """Codex's ``host_executable``: with it, only the listed paths match the name's rules."""
    rules = RuleSet(
        parse_codex_rules(
            'prefix_rule(pattern=["git", "status"])\n'
            'host_executable(name="git", paths=["/opt/homebrew/bin/git", "/usr/bin/git"])\n',
            file="h.rules",
        )
    )

    def everywhere(_: str) -> str:
        return "/usr/local/bin/git"  # what `which` would say: not one of the listed paths

    listed = judge_analysis(analyze("/opt/homebrew/bin/git status"), rules, which=everywhere)
    other = judge_analysis(analyze("/usr/local/bin/git status"), rules, which=everywhere)
    assert listed.decision == "allow" and other.decision == "unmatched"


def test_sudo_is_never_allowed_by_a_rule() -> None:
    assert not analyze("sudo ls").allowed  # the analysis refuses it before any rule
    # Were a command ever to reach the rules through sudo, an allow rule would still ask.
    wrapped = Command(name="ls", argv=(Word(text="ls", value="ls"),), wrappers=("sudo",))
    rules = RuleSet(parse_codex_rules('prefix_rule(pattern=["ls"])', file="l.rules"))
    judged = judge_analysis(Analysis(command="sudo ls", allowed=True, commands=(wrapped,)), rules)
    assert judged.decision == "prompt" and "never allowed" in judged.commands[0].note
