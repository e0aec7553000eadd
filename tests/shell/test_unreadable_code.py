"""Issue 28 finding 6: without a kernel sandbox, code the analysis cannot read is refused
unless an admin allows the invocation (``unconfined_allowed_commands``).

The attacks themselves are kept in ``corpus/hardening.txt`` (class ``unreadable``); these
tests pin the allowlist's matching, the sandboxed verdicts and the setting's path through
``check_command``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import corral
from corral.errors import ConfigError
from corral.settings import Settings
from corral.shell.analysis import Analysis, analyze
from corral.shell.analysis._unreadable import harmless_awk
from tests.shell.test_analysis_corpus import CWD, HOME, PROTECTED, UNCONFINED_HOME

UNREADABLE = (
    "make test",
    "python3 scripts/build.py --fast",
    "./run.sh",
    "bash run.sh",
    "source env.sh",
    "npm run build",
    "python3 -c 'print(1)'",
    "perl -ne 'print if /x/' f",
)


def _unconfined(command: str, allowed: tuple[tuple[str, ...], ...] = ()) -> Analysis:
    return analyze(
        command,
        home=UNCONFINED_HOME,
        cwd=CWD,
        protected_paths=PROTECTED,
        unconfined=True,
        allowed_invocations=allowed,
    )


@pytest.mark.parametrize("command", UNREADABLE)
def test_unreadable_code_is_refused_unconfined_and_left_to_the_sandbox(command: str) -> None:
    refused = _unconfined(command)
    assert (refused.allowed, refused.rule) == (False, "unreadable_code"), refused
    assert "'unconfined_allowed_commands'" in refused.detail
    assert "an admin can allow this invocation" in refused.detail
    sandboxed = analyze(command, home=HOME, cwd=CWD, protected_paths=PROTECTED)
    assert sandboxed.allowed, sandboxed


def test_an_allowed_invocation_lets_exactly_its_words_through() -> None:
    allowed = (("make", "test"), ("python3", "scripts/build.py", "..."))
    for command in (
        "make test",
        "nice -n 5 make test",
        "timeout 60 make test",
        "python3 scripts/build.py",
        "python3 scripts/build.py --fast",
        "cd sub && make test",
        "make test 2>&1 | tee test.log",
    ):
        assert _unconfined(command, allowed).allowed, command
    for command in (
        "make install",
        "make",
        "make test -f /tmp/evil.mk",
        "make test --eval=all:",
        "make -f /tmp/evil.mk test",
        "python3 scripts/build.py.evil",
        "python3 -m scripts/build.py",
        "./make test",
        "/tmp/make test",
        "make 'te'\"$X\"st",
        "make tes",
        "python3 scripts/build.py.evil",
        "python3 -c 'import scripts' scripts/build.py",
        "make test; make install",
        "make test && ./run.sh",
        "bash -c 'make install'",
    ):
        verdict = _unconfined(command, allowed)
        assert not verdict.allowed, command
        assert verdict.rule == "unreadable_code", (command, verdict.rule)


def test_an_allowed_invocation_still_meets_every_other_rule() -> None:
    allowed = (("python3",), ("bash",))
    refused = _unconfined("python3 -c \"import os; os.system('reboot')\"", allowed)
    assert refused.rule == "blocked_binary"
    refused = _unconfined("bash -c 'cat /srv/corral/data/corral.db'", allowed)
    assert refused.rule == "protected_path"


def test_a_sharper_rule_met_later_names_the_real_problem() -> None:
    assert _unconfined("make; sudo ls").rule == "blocked_binary"


def test_a_script_written_whole_in_the_same_line_is_read_not_refused() -> None:
    assert _unconfined("printf 'echo hello\\n' > hello.sh && bash hello.sh").allowed
    assert _unconfined("printf 'ls\\n' >> hello.sh && bash hello.sh").rule == "unreadable_code"
    assert not _unconfined("echo ls | tee -a hello.sh; bash hello.sh").allowed


@pytest.mark.parametrize(
    ("program", "harmless"),
    [
        ("{ print $1 }", True),
        ("-F, '{ print $2, $3 }'", True),
        ("$3 > 100 { print $1 }", True),
        ('NR > 1 { printf "%s\\n", $2 }', True),
        ("{ s += $1 } END { print s }", True),
        ('{ print $1 > "out" }', False),
        ('{ print "a;b" > "out" }', False),
        ('{ print "(", $1 > "out" }', False),
        ('/x/ { print >> "log" }', False),
        ('{ print | "sh" }', False),
        ('BEGIN { "date" | getline d }', False),
        ('BEGIN { system("id") }', False),
        ('/"/ { print | "sh" } # "', False),
        ('{ print ENVIRON["HOME"] }', False),
        ('BEGIN { ARGV[1] = "/etc/shadow"; ARGC = 2 } { print }', False),
        ('@include "x.awk"', False),
        ('BEGIN { sys\\\ntem("id") }', False),
        ("{ close(f) }", False),
    ],
)
def test_harmless_awk_is_only_printing(program: str, harmless: bool) -> None:
    assert harmless_awk(program) is harmless


def test_the_setting_rejects_empty_entries() -> None:
    with pytest.raises((ConfigError, ValueError), match="unconfined_allowed_commands"):
        Settings(unconfined_allowed_commands=[["make", ""]])
    with pytest.raises((ConfigError, ValueError), match="unconfined_allowed_commands"):
        Settings(unconfined_allowed_commands=[[]])


async def test_check_command_applies_the_operators_allowlist(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with corral.open(data, sandbox="unconfined") as platform:
        refused = await platform.check_command("make test")
        assert (refused.guard, refused.rule) == ("analysis", "unreadable_code")
    async with corral.open(
        data, sandbox="unconfined", unconfined_allowed_commands=[["make", "test"]]
    ) as platform:
        assert (await platform.check_command("make test")).allowed
        assert (await platform.check_command("make install")).rule == "unreadable_code"
