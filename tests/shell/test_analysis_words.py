"""Word resolution: quote removal, escapes, ANSI-C strings, tilde, braces, positionals."""

from __future__ import annotations

import pytest

from corral.shell.analysis import analyze

HOME = "/home/agent"


def argv(command: str, *, home: str | None = HOME, index: int = 0) -> list[str | None]:
    result = analyze(command, home=home)
    assert result.allowed, (command, result.rule, result.detail)
    return [word.value for word in result.commands[index].argv]


@pytest.mark.parametrize(
    ("written", "value"),
    [
        (r"\rm", "rm"),
        ("r''m", "rm"),
        ('r""m', "rm"),
        ('"r"m', "rm"),
        ("$'\\x72m'", "rm"),
        ("$'\\162m'", "rm"),
        ("$'\\u0072m'", "rm"),
        ("$'\\U00000072m'", "rm"),
        ('$"rm"', "rm"),
        ("'a b'", "a b"),
        ('"a\\$b"', "a$b"),
        ('"a\\x"', "a\\x"),
        ('"a\\"b"', 'a"b'),
        ("$'it\\'s'", "it's"),
        ("$'a\\tb'", "a\tb"),
        ("$'\\cA'", "\x01"),
        ("$'ab\\0cd'x", "abx"),
        ("a\\ b", "a b"),
        ("sud''\\o", "sudo"),
        ('"a"\\ b', "a b"),
        ("$'\\x'", "\\x"),
    ],
)
def test_quote_removal(written: str, value: str) -> None:
    assert argv(f"printf %s {written}")[2] == value


def test_tilde_expands_only_unquoted_at_the_start() -> None:
    assert argv("echo ~ ~/x '~' \"~/x\" a~b ~root/x") == [
        "echo",
        HOME,
        f"{HOME}/x",
        "~",
        "~/x",
        "a~b",
        "/root/x",
    ]


def test_tilde_without_a_known_home_stays_a_marker() -> None:
    assert argv("echo ~/x", home=None) == ["echo", "~/x"]


def test_home_variable_is_the_home_folder() -> None:
    assert argv('echo "$HOME/a" ${HOME}') == ["echo", f"{HOME}/a", HOME]


def test_unknown_parts_have_no_value() -> None:
    result = analyze('echo "$x" a$(date)b "${y:-z}"')
    assert [c.name for c in result.commands] == ["date", "echo"]
    assert [w.value for w in result.commands[1].argv] == ["echo", None, None, None]


def test_brace_expansion_of_arguments() -> None:
    assert argv("echo a{b,c}d {1..3} {01..03} {a..c} '{x,y}'") == [
        "echo",
        "abd",
        "acd",
        "1",
        "2",
        "3",
        "01",
        "02",
        "03",
        "a",
        "b",
        "c",
        "{x,y}",
    ]


def test_globs_are_flagged_and_quoted_ones_are_not() -> None:
    result = analyze("ls *.py '*.txt' \\*.md a[bc]")
    words = result.commands[0].argv[1:]
    assert [w.glob for w in words] == [True, False, False, True]


def test_positional_parameters_of_bash_c() -> None:
    result = analyze('bash -c \'echo "$1" $2 "$0" $10\' zero one two')
    inner = result.commands[-1]
    assert [w.value for w in inner.argv] == ["echo", "one", "two", "zero", "one0"]
    assert inner.depth == 1


def test_function_arguments_are_bound_at_the_call() -> None:
    result = analyze('mk() { mkdir -p "$1" && touch "$1/$2"; }; mk out file.txt')
    touched = [c for c in result.commands if c.name == "touch"]
    assert [w.value for w in touched[-1].argv] == ["touch", "out/file.txt"]


def test_splat_of_call_arguments() -> None:
    result = analyze('run() { printf "%s\\n" "$@"; }; run a "b c"')
    last = result.commands[-1]
    assert [w.value for w in last.argv] == ["printf", "%s\\n", "a", "b c"]


def test_shift_makes_positionals_unknown() -> None:
    result = analyze('f() { shift; echo "$1"; }; f a b')
    assert [w.value for w in result.commands[-1].argv] == ["echo", None]


def test_nonempty_guard_keeps_rm_allowed() -> None:
    assert analyze('rm -rf "${BUILD:?}/"').allowed
    assert analyze('rm -rf "${BUILD:-build}/"').allowed
    refused = analyze('rm -rf "${BUILD}/"')
    assert refused.rule == "dangerous_rm"
    assert "empty" in refused.detail


def test_command_name_is_the_basename_of_a_path() -> None:
    result = analyze("/usr/bin/env python3 -V")
    assert [c.name for c in result.commands] == ["python3"]
    assert result.commands[0].wrappers == ("env",)


def test_here_document_text_fed_to_a_shell_is_analysed() -> None:
    result = analyze("bash <<'EOF'\ncd src\nmake\nEOF")
    assert [c.name for c in result.commands] == ["bash", "make"]
    assert result.commands[-1].depth == 1


def test_unquoted_here_document_with_expansions_is_dynamic_for_a_shell() -> None:
    assert analyze("bash <<EOF\nls $DIR\nEOF").rule == "dynamic_script"
    assert analyze("cat <<EOF\nls $DIR\nEOF").allowed


@pytest.mark.parametrize("word", ["[z-a]*", "/[z-a]", "[!z-a]x", "a[9-0]b"])
def test_a_reversed_bracket_range_is_judged_not_raised(word: str) -> None:
    result = analyze(f"ls {word}")
    assert result.allowed and result.commands[0].argv[1].glob


@pytest.mark.parametrize(
    ("word", "reaches"),
    [
        ("[z-a]netrc", False),  # bash: a reversed range matches nothing
        ("[!z-a]netrc", True),  # so its negation matches any character, '_' too
        ("[z-a_]netrc", True),  # the class's other members still match
        ("[z-\\a_]netrc", True),
    ],
)
def test_a_reversed_range_matches_nothing_as_in_bash(word: str, reaches: bool) -> None:
    result = analyze(f"ls {word}", home=HOME)
    assert (result.rule == "protected_path") is reaches, (word, result.rule, result.detail)
