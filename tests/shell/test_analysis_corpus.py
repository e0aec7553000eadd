"""The evasion corpora must be refused with the expected rule; ordinary commands must pass.

``evasions.txt`` is refused in both modes, ``hardening.txt`` (issue 19, tagged by class) in
unconfined mode, where the analysis is the boundary; ``allowed.txt`` passes in both, except
its entries tagged ``[unconfined: <rule>]``: they run code the analysis cannot read (or put a
project folder on PATH), which unconfined mode refuses with that rule (issue 28).
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
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

    @property
    def refused_unconfined(self) -> str | None:
        """The rule that refuses this ordinary command in unconfined mode (see the module)."""
        tag = UNCONFINED_TAG.search(self.source)
        return tag.group(1) if tag else None


UNCONFINED_TAG = re.compile(r"\[unconfined: (\w+)\]$")


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
HARDENING = load("hardening.txt")
ALLOWED = load("allowed.txt")
UNCONFINED_HOME = "/tmp/corral-home-XXXXXXXX"
"""An unconfined command's HOME as the check sees it (see ``corral.shell.check``)."""
CLASSES = {
    "tilde", "subscript", "exec_option", "startup", "loader", "git_write", "written_script",
    "inline_code", "host", "env_wrapper", "unreadable", "bypass",
}  # fmt: skip
MODES = {"sandboxed": (HOME, False), "unconfined": (UNCONFINED_HOME, True)}


def _class(case: Case) -> str:
    return case.source.split(":", 1)[0]


def test_corpus_sizes() -> None:
    assert len(EVASIONS) >= 150
    assert len(HARDENING) >= 200
    assert len(ALLOWED) >= 150
    assert {case.expected for case in ALLOWED} == {"allowed"}
    every = [case.command for case in (*EVASIONS, *HARDENING)]
    assert len(set(every)) == len(every), "duplicate evasions"


def test_hardening_corpus_covers_every_class() -> None:
    found = Counter(_class(case) for case in HARDENING)
    assert set(found) == CLASSES, set(found) ^ CLASSES
    assert min(found.values()) >= 5, found


def test_corpus_covers_every_rule_it_names() -> None:
    named = {case.expected for case in (*EVASIONS, *HARDENING)}
    assert named <= set(RULES)
    must_cover = set(RULES) - {"too_large", "nesting_too_deep"}
    assert must_cover <= named, sorted(must_cover - named)


def _refused(case: Case, *, home: str, unconfined: bool) -> None:
    result = analyze(
        case.command, home=home, cwd=CWD, protected_paths=PROTECTED, unconfined=unconfined
    )
    assert not result.allowed, f"allowed: {case.command!r} ({case.source})"
    assert result.rule == case.expected, (case.command, result.rule, result.word, result.detail)
    assert result.word, "a refusal names the offending word"
    assert result.detail.endswith((".", ";")) or len(result.detail) > 40
    assert result.commands == () and result.paths == ()


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize(
    "case", EVASIONS, ids=[f"L{case.line}-{case.expected}" for case in EVASIONS]
)
def test_evasion_is_refused(case: Case, mode: str) -> None:
    home, unconfined = MODES[mode]
    _refused(case, home=home, unconfined=unconfined)


@pytest.mark.parametrize(
    "case", HARDENING, ids=[f"L{case.line}-{_class(case)}-{case.expected}" for case in HARDENING]
)
def test_hardening_evasion_is_refused_unconfined(case: Case) -> None:
    _refused(case, home=UNCONFINED_HOME, unconfined=True)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", ALLOWED, ids=[f"L{case.line}" for case in ALLOWED])
def test_ordinary_command_passes(case: Case, mode: str) -> None:
    home, unconfined = MODES[mode]
    result = analyze(
        case.command, home=home, cwd=CWD, protected_paths=PROTECTED, unconfined=unconfined
    )
    expected = case.refused_unconfined
    if unconfined and expected is not None:
        assert not result.allowed and result.rule == expected, (case.command, result.rule)
        if expected == "unreadable_code":
            assert "unconfined_allowed_commands" in result.detail
        return
    assert result.allowed, (case.command, result.rule, result.word, result.detail)
    assert result.rule is None and result.word is None
    assert result.commands, "an allowed command reports what it runs"
