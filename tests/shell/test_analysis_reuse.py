"""A call that repeats its function body's definition walk gives the very verdict a fresh
walk of the body would: every corpus entry as a function body, and the evasions aimed at
the reuse itself (state changed between definition and call, arguments, context, stack).

The reference is the same analysis with reuse switched off (``Walker(reuse=False)``).
Commands are never run: only the analyser's verdicts are compared.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from corral.shell.analysis import Analysis, _analyze, _functions, _walker
from corral.shell.analysis._records import Recorder
from tests.shell.test_analysis_corpus import ALLOWED, EVASIONS, HARDENING

CWD = "/srv/corral/projects/app"
PROTECTED = ("/srv/corral/data/corral.db", "/srv/corral/data/keys", "/srv/corral/secret.key")
MODES = {"sandboxed": ("/home/agent", False), "unconfined": ("/tmp/corral-home-XXXXXXXX", True)}


def _verdict(command: str, mode: str) -> Analysis:
    home, unconfined = MODES[mode]
    return _analyze._analyze(command, PROTECTED, home, CWD, unconfined)


def _without_reuse(command: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> Analysis:
    class Fresh(_walker.Walker):
        def __init__(self, recorder: Recorder, *, reuse: bool = True) -> None:
            super().__init__(recorder, reuse=False)

    with monkeypatch.context() as patch:
        patch.setattr(_analyze, "Walker", Fresh)
        return _verdict(command, mode)


@pytest.fixture
def repeats(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Names of the functions whose calls repeated the definition's walk."""
    seen: list[str] = []
    real = _functions._repeat

    def spy(walker: _functions.Walking, info: _functions.FunctionInfo, walk: object) -> object:
        seen.append(info.name)
        return real(walker, info, walk)  # type: ignore[arg-type]

    monkeypatch.setattr(_functions, "_repeat", spy)
    yield seen


def _same(command: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> Analysis:
    reused = _verdict(command, mode)
    assert reused == _without_reuse(command, mode, monkeypatch), command
    return reused


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_corpus_entry_as_a_function_body(
    mode: str, monkeypatch: pytest.MonkeyPatch, repeats: list[str]
) -> None:
    for case in (*ALLOWED, *EVASIONS, *HARDENING):
        body = case.command
        for shape in ("f() {{\n{c}\n}}\nf", "f() {{\n{c}\n}}\nf; f", "f() {{\n{c}\n}}; g=1; f"):
            _same(shape.format(c=body), mode, monkeypatch)
    assert len(repeats) > 200, "the corpus bodies are mostly repeated, not walked again"


def test_an_ordinary_call_repeats_the_walk(
    monkeypatch: pytest.MonkeyPatch, repeats: list[str]
) -> None:
    command = (
        "build() {\n  mkdir -p out && cd src || return 1\n  make -j4 2>>../build.log\n}\n"
        "build && tar czf dist.tgz out"
    )
    result = _same(command, "sandboxed", monkeypatch)
    assert result.allowed and repeats == ["build"]
    assert [c.name for c in result.commands] == ["build", "mkdir", "return", "make", "tar"]
    assert [m.kind for m in result.cd_moves] == ["cd", "cd"], "at the definition and the call"
    assert [p.path for p in result.paths if p.access == "write"] == [
        "out",
        "../build.log",
        "dist.tgz",
    ]


EVASIONS_OF_REUSE = {
    # The body reads its arguments: each call is walked with them bound.
    "arguments": ('f() { rm -rf "$1"; }; f /', "dangerous_rm"),
    "all arguments": ('f() { rm -rf "$@"; }; f ~', "dangerous_rm"),
    "through another function": ('f() { rm -rf "$1"; }; g() { f /; }; g', "dangerous_rm"),
    # What the body runs changed between definition and call.
    "redefined": ("f() { ls; }; f() { sudo ls; }; f", "blocked_binary"),
    "callee defined later": ('f() { g /; }; g() { rm -rf "$1"; }; f', "dangerous_rm"),
    "moved before the call": ("f() { cat secret.key; }; cd /srv/corral; f", "protected_path"),
    "moved by a pushd": ("f() { cat corral.db; }; pushd /srv/corral/data; f", "protected_path"),
    # The call's context is not the definition's.
    "here-document to the body's shell": ("f() { bash; }; f <<'E'\nreboot\nE", "blocked_binary"),
    "piped into the body's shell": ("f() { sh; }; echo reboot | f", "shell_stdin"),
    "forks itself": ("f() { f | f & }; f", "fork_bomb"),
    "called in the background": ("f() { g; }\nf &\ng() { f; }", "fork_bomb"),
    "called in a subshell": ("f() { cd build; }; (f); ls", None),
    "recursion": ("f() { g; }; g() { f | f & }; f", "fork_bomb"),
    "calls itself": ("f() { ls; f; }; f", None),
}
UNCONFINED_EVASIONS = {
    # Files written after the definition (or by it) and run by the body.
    "script written after": ("f() { ./run.sh; }; echo reboot > run.sh; f", "blocked_binary"),
    "script written by an earlier call": (
        "f() { ./run.sh; echo reboot > run.sh; }; f; f",
        "blocked_binary",
    ),
    "makefile written after": (
        "f() { make; }; printf 'all:\\n\\treboot\\n' > Makefile; f",
        "blocked_binary",
    ),
    "git hook written after": (
        "f() { git commit -m x; }; printf 'reboot' > .git/hooks/pre-commit; f",
        "blocked_binary",
    ),
    # Which process ids are the command's own changes between definition and call.
    "pid variable reassigned": ("sleep 9 & p=$!; f() { kill $p; }; p=1; f", "dangerous_kill"),
}


@pytest.mark.parametrize("name", sorted(EVASIONS_OF_REUSE))
@pytest.mark.parametrize("mode", sorted(MODES))
def test_evasion_of_reuse(name: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    command, rule = EVASIONS_OF_REUSE[name]
    result = _same(command, mode, monkeypatch)
    assert result.rule == rule, (result.rule, result.word, result.detail)


@pytest.mark.parametrize("name", sorted(UNCONFINED_EVASIONS))
def test_unconfined_evasion_of_reuse(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    command, rule = UNCONFINED_EVASIONS[name]
    result = _same(command, "unconfined", monkeypatch)
    assert not result.allowed
    assert result.rule in (rule, "written_script", "dynamic_script", "exec_option"), result


def test_a_repeat_counts_the_work_of_the_walk_it_saves(
    monkeypatch: pytest.MonkeyPatch, repeats: list[str]
) -> None:
    monkeypatch.setattr(_walker.Walker, "max_work", 400)
    command = "f() { bash -c 'echo one; echo two; echo three; echo four'; }; " + "f; " * 12
    result = _same(command, "sandboxed", monkeypatch)
    assert result.rule == "too_large" and repeats


def test_a_call_from_much_deeper_walks_the_body_again(
    monkeypatch: pytest.MonkeyPatch, repeats: list[str]
) -> None:
    nest = _functions.STACK_PAD
    command = "f() { ls; }; " + "{ " * nest + "f; " + "}; " * nest
    _same(command, "sandboxed", monkeypatch)
    assert repeats == []
    _same("f() { ls; }; { { f; }; }", "sandboxed", monkeypatch)
    assert repeats == ["f"]


def test_near_the_recursion_limit_the_verdict_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bodies nested ever deeper, called from a little deeper: where the padded check at
    the definition overflows, the analysis starts over without reuse."""
    attempts: list[bool] = []

    class Counted(_walker.Walker):
        def __init__(self, recorder: Recorder, *, reuse: bool = True) -> None:
            attempts.append(reuse)
            super().__init__(recorder, reuse=reuse)

    verdicts = set()
    started_over = 0
    for depth in range(70, 120):
        body = "echo $(" * depth + "ls" + ")" * depth
        command = f"f() {{ {body}; }}; {{ {{ {{ f; }}; }}; }}"
        attempts.clear()
        with monkeypatch.context() as patch:
            patch.setattr(_analyze, "Walker", Counted)
            reused = _verdict(command, "sandboxed")
        started_over += attempts == [True, False]
        assert reused == _without_reuse(command, "sandboxed", monkeypatch), depth
        verdicts.add(reused.rule)
    assert verdicts == {None, "too_large"}, "the range crosses the recursion limit"
    assert started_over, "some depths overflow only the padded check"
