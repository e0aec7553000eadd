"""Properties: no spelling of a blocked name gets through, nesting is bounded at four
levels, and quote removal agrees with bash itself."""

from __future__ import annotations

import shlex
import shutil
import subprocess

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from corral.shell.analysis import MAX_DEPTH, analyze

HOME = "/home/agent"
CWD = "/srv/corral/projects/app"

BLOCKED = ["sudo", "su", "doas", "pkexec", "reboot", "shutdown", "mkfs.ext4", "insmod", "mount"]
TARGETS = [(name, "ls", "blocked_binary") for name in BLOCKED] + [
    ("eval", "ls", "eval"),
    ("rm", "-rf /", "dangerous_rm"),
    ("rm", "-fr ~", "dangerous_rm"),
]
WRAPPERS = [
    "timeout 5",
    "timeout -k 1 5s",
    "env",
    "env -i",
    "env A=1",
    "env -u HOME",
    "nice -n 5",
    "nohup",
    "setsid",
    "stdbuf -oL",
    "command",
    "exec",
    "time",
    "xargs",
    "busybox",
    "flock /tmp/l",
    "ionice -c3",
    "uv run",
]
PREFIXES = ["", "/bin/", "/usr/bin/", "./", "/usr/local/../bin/", "../../usr/bin/"]


def _char(draw: st.DrawFn, char: str) -> str:
    style = draw(st.sampled_from(["plain", "backslash", "single", "double", "oct", "hex", "uni"]))
    if style == "plain":
        return char
    if style == "backslash":
        return "\\" + char
    if style == "single":
        return f"'{char}'"
    if style == "double":
        return f'"{char}"'
    if style == "oct":
        return f"$'\\{ord(char):03o}'"
    if style == "hex":
        return f"$'\\x{ord(char):02x}'"
    return f"$'\\u{ord(char):04x}'"


@st.composite
def obfuscated(draw: st.DrawFn) -> tuple[str, str]:
    name, args, rule = draw(st.sampled_from(TARGETS))
    spelled = ""
    for char in draw(st.sampled_from(PREFIXES)) + name:
        spelled += _char(draw, char)
        spelled += draw(st.sampled_from(["", "", "", "''", '""', "$''"]))
    if draw(st.booleans()):
        spelled = f'"{spelled}"' if all(c not in spelled for c in "\"'$\\") else spelled
    wrappers = draw(st.lists(st.sampled_from(WRAPPERS), max_size=3))
    if rule == "eval":
        wrappers = [w for w in wrappers if w in ("command", "busybox")]
    command = " ".join([*wrappers, spelled, args])
    shape = draw(st.sampled_from(["flat", "bash-c", "subst", "group", "pipe", "chain", "if"]))
    if shape == "bash-c":
        command = f"bash -c {shlex.quote(command)}"
    elif shape == "subst":
        command = f"echo $({command})"
    elif shape == "group":
        command = f"{{ {command}; }}"
    elif shape == "pipe":
        command = f"echo x | {command}"
    elif shape == "chain":
        command = f"true && {command}"
    elif shape == "if":
        command = f"if true; then {command}; fi"
    return command, rule


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obfuscated())
def test_spelling_never_hides_a_blocked_name(case: tuple[str, str]) -> None:
    command, rule = case
    result = analyze(command, home=HOME, cwd=CWD)
    assert not result.allowed, command
    assert result.rule == rule, (command, result.rule, result.word)


SAFE = [
    "ls -la",
    "git status",
    "python3 -m pytest -q tests/",
    "grep -rn TODO src | head -5",
    "cd src && make",
    'for f in *.py; do wc -l "$f"; done',
    "cat <<'END' > notes.txt\nhello $HOME\nEND",
    "curl -fsSL https://example.com -o page.html",
    'echo "it\'s $(date +%Y)"',
    "tar czf out.tgz dist/",
]
LEVEL = [
    "bash -c {}",
    "sh -c {}",
    "bash -lc {}",
    "bash -ec {}",
    "env bash -c {}",
    "timeout 60 bash -c {}",
    "bash -o pipefail -c {}",
]


@st.composite
def nested(draw: st.DrawFn) -> tuple[str, int]:
    command = draw(st.sampled_from(SAFE))
    levels = draw(st.integers(min_value=1, max_value=MAX_DEPTH + 1))
    for _ in range(levels):
        command = draw(st.sampled_from(LEVEL)).format(shlex.quote(command))
    return command, levels


@settings(max_examples=200, deadline=None)
@given(nested())
def test_nesting_passes_up_to_four_levels_and_stops_at_five(case: tuple[str, int]) -> None:
    command, levels = case
    result = analyze(command, home=HOME, cwd=CWD)
    if levels <= MAX_DEPTH:
        assert result.allowed, (command, result.rule, result.word)
        assert max(c.depth for c in result.commands) == levels
    else:
        assert not result.allowed
        assert result.rule == "nesting_too_deep"


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(BLOCKED), st.integers(min_value=1, max_value=MAX_DEPTH))
def test_blocked_name_is_found_at_any_allowed_depth(name: str, levels: int) -> None:
    command = f"{name} ls"
    for _ in range(levels):
        command = f"bash -c {shlex.quote(command)}"
    result = analyze(command)
    assert result.rule == "blocked_binary"
    assert result.word == name


# -- quote removal agrees with bash ------------------------------------------------------

ALPHABET = st.characters(
    min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters="$`"
) | st.sampled_from(["\t", "é", "ü", "✓"])


def _encode(draw: st.DrawFn, text: str) -> str:
    out = []
    for char in text:
        style = draw(st.sampled_from(["backslash", "single", "double", "ansi", "plain"]))
        if style == "plain" and char.isalnum():
            out.append(char)
        elif style == "single" and char != "'":
            out.append(f"'{char}'")
        elif style == "double":
            out.append('"' + ("\\" + char if char in '"\\' else char) + '"')
        elif style == "ansi" and char.isascii():
            out.append(f"$'\\x{ord(char):02x}'")
        else:
            out.append("$'\\t'" if char == "\t" else "\\" + char)
    return "".join(out) or "''"


@st.composite
def encoded_words(draw: st.DrawFn) -> tuple[list[str], str]:
    words = draw(st.lists(st.text(ALPHABET, min_size=1, max_size=8), min_size=1, max_size=4))
    return words, " ".join(_encode(draw, w) for w in words)


@settings(max_examples=300, deadline=None)
@given(encoded_words())
def test_quote_removal_matches_the_intended_words(case: tuple[list[str], str]) -> None:
    words, encoded = case
    result = analyze(f"printf %s {encoded}")
    assume(result.rule != "protected_path")  # a random word may spell ".ssh" or ".AWS"
    assert result.allowed, (encoded, result.rule, result.detail)
    assert [w.value for w in result.commands[0].argv[2:]] == words


BASH = shutil.which("bash")


@settings(max_examples=60, deadline=None)
@given(encoded_words())
def test_quote_removal_matches_real_bash(case: tuple[list[str], str]) -> None:
    if BASH is None:
        return
    words, encoded = case
    result = analyze(f"printf '%s\\0' {encoded}")
    assume(result.allowed)
    completed = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", f"printf '%s\\0' {encoded}"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        check=True,
    )
    from_bash = completed.stdout.decode("utf-8").split("\0")[:-1]
    assert [w.value for w in result.commands[0].argv[2:]] == from_bash == words


SHELLISH = st.text(
    st.sampled_from(list("abc rm sudo-$'\"\\`(){}[]<>|&;=*?~/.\n\t#!%:,@^+0123456789")),
    max_size=80,
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(SHELLISH, st.text(max_size=60)))
def test_any_text_gets_a_verdict_and_never_an_exception(text: str) -> None:
    result = analyze(text, home=HOME, cwd=CWD, protected_paths=["/srv/corral/data"])
    assert result.allowed or (result.rule is not None and result.word is not None)
    assert result.allowed or result.detail
