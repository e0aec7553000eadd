"""The evasion corpus must be refused with the expected rule; ordinary commands must pass."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

import pytest

from corral.shell.analysis import RULES, analyze

CORPUS = Path(__file__).parent / "corpus"
HOME = "/home/agent"
CWD = "/srv/corral/projects/app"
PROTECTED = ("/srv/corral/data/corral.db", "/srv/corral/data/keys", "/srv/corral/secret.key")


@dataclass(frozen=True)
class Case:
    expected: str
    source: str
    command: str
    line: int


def load(name: str) -> list[Case]:
    """Read a corpus file: ``=== <rule> | <source>`` headers, each followed by a command."""
    cases: list[Case] = []
    header: tuple[str, str, bool, int] | None = None
    body: list[str] = []

    def flush() -> None:
        if header is None:
            return
        rule, source, escaped, line = header
        text = "\n".join(body).rstrip("\n")
        if escaped:
            text = codecs.decode(text, "unicode_escape")
        cases.append(Case(rule, source, text, line))

    for number, raw in enumerate((CORPUS / name).read_text("utf-8").splitlines(), start=1):
        if raw.startswith("=== "):
            flush()
            rule, _, source = raw[4:].partition(" | ")
            escaped = source.endswith("[escaped]")
            header = (rule.strip(), source.removesuffix("[escaped]").strip(), escaped, number)
            body = []
        elif header is not None:
            body.append(raw)
        elif raw.strip() and not raw.startswith("#"):
            raise AssertionError(f"{name}:{number}: text before the first header")
    flush()
    return cases


EVASIONS = load("evasions.txt")
ALLOWED = load("allowed.txt")


def _analyze(command: str) -> object:
    return analyze(command, home=HOME, cwd=CWD, protected_paths=PROTECTED)


def test_corpus_sizes() -> None:
    assert len(EVASIONS) >= 150
    assert len(ALLOWED) >= 60
    assert {case.expected for case in ALLOWED} == {"allowed"}
    assert len({case.command for case in EVASIONS}) == len(EVASIONS), "duplicate evasions"


def test_corpus_covers_every_rule_it_names() -> None:
    named = {case.expected for case in EVASIONS}
    assert named <= set(RULES)
    must_cover = set(RULES) - {"too_large", "nesting_too_deep"}
    assert must_cover <= named, sorted(must_cover - named)


@pytest.mark.parametrize(
    "case", EVASIONS, ids=[f"L{case.line}-{case.expected}" for case in EVASIONS]
)
def test_evasion_is_refused(case: Case) -> None:
    result = analyze(case.command, home=HOME, cwd=CWD, protected_paths=PROTECTED)
    assert not result.allowed, f"allowed: {case.command!r} ({case.source})"
    assert result.rule == case.expected, (case.command, result.rule, result.word, result.detail)
    assert result.word, "a refusal names the offending word"
    assert result.detail.endswith((".", ";")) or len(result.detail) > 40
    assert result.commands == () and result.paths == ()


@pytest.mark.parametrize("case", ALLOWED, ids=[f"L{case.line}" for case in ALLOWED])
def test_ordinary_command_passes(case: Case) -> None:
    result = analyze(case.command, home=HOME, cwd=CWD, protected_paths=PROTECTED)
    assert result.allowed, (case.command, result.rule, result.word, result.detail)
    assert result.rule is None and result.word is None
    assert result.commands, "an allowed command reports what it runs"
