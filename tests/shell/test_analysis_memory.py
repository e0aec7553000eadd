"""Verdicts on repeated command lines are remembered, keyed by every input of the analysis."""

from __future__ import annotations

from corral.shell.analysis import analyze
from corral.shell.analysis._analyze import CACHED_COMMAND_CHARS

CWD = "/srv/app"


def test_the_same_inputs_give_the_same_verdict_object() -> None:
    first = analyze("ls -la src", cwd=CWD)
    again = analyze("ls -la src", cwd=CWD)
    assert first.allowed
    assert again is first


def test_each_input_is_part_of_the_key() -> None:
    command = "cat /srv/data/corral.db"
    assert analyze(command, cwd=CWD).allowed
    refused = analyze(command, cwd=CWD, protected_paths=["/srv/data/corral.db"])
    assert not refused.allowed
    assert refused.rule == "protected_path"
    # A list and a tuple of the same paths are the same input.
    assert analyze(command, cwd=CWD, protected_paths=("/srv/data/corral.db",)) is refused

    computed_call = "perl -e 'system($ARGV[0])' ls"
    assert analyze(computed_call, cwd=CWD).allowed
    assert analyze(computed_call, cwd=CWD, unconfined=True).rule == "interpreter_code"

    moved = analyze("cat notes.txt", cwd="/srv/other")
    assert moved.cwd == "/srv/other"
    assert moved is not analyze("cat notes.txt", cwd=CWD)

    home_word = "cat ~/notes.txt"
    assert analyze(home_word, home="/home/a").paths[0].path == "/home/a/notes.txt"
    assert analyze(home_word, home="/home/b").paths[0].path == "/home/b/notes.txt"


def test_long_command_lines_are_analysed_afresh() -> None:
    script = "echo start\n" + "true\n" * (CACHED_COMMAND_CHARS // 5 + 1)
    assert len(script) > CACHED_COMMAND_CHARS
    first = analyze(script, cwd=CWD)
    assert first.allowed
    assert analyze(script, cwd=CWD) is not first
    assert analyze(script, cwd=CWD) == first
