"""The analyser's shortcuts (work remembered within one analysis, cheaper pre-checks) give
the verdicts the full work would: a differing context still gives a differing verdict."""

from __future__ import annotations

from corral.shell.analysis import analyze
from corral.shell.analysis._paths import protection

HOME = "/home/agent"
CWD = "/srv/corral/projects/app"
PROTECTED = ("/srv/corral/data/corral.db", "/srv/corral/data/keys", "/srv/corral/secret.key")


def _rule(command: str, *, cwd: str = CWD, protected: tuple[str, ...] = PROTECTED) -> str | None:
    result = analyze(command, home=HOME, cwd=cwd, protected_paths=protected)
    return result.rule


def test_a_word_checked_again_after_a_cd_is_judged_from_the_new_place() -> None:
    # The first ``cat`` reads the project's own data/corral.db, the second the platform's.
    assert _rule("cat data/corral.db") is None
    assert _rule("cat data/corral.db; cd /srv/corral && cat data/corral.db") == "protected_path"
    assert _rule("cd /srv/corral; cat data/corral.db; cd /tmp; cat data/corral.db") == (
        "protected_path"
    )
    assert _rule("cd /tmp; cat data/corral.db; cd /srv/corral; cat data/corral.db") == (
        "protected_path"
    )


def test_a_word_is_judged_against_each_analysis_own_context() -> None:
    assert _rule("cat data/corral.db", cwd="/srv/corral") == "protected_path"
    assert _rule("cat data/corral.db", cwd="/srv") is None
    assert _rule("cat corral.db", cwd="/srv/corral/data") == "protected_path"
    assert _rule("cat corral.db", cwd="/srv/corral/data", protected=()) is None
    other = ("/opt/corral/corral.db",)
    assert _rule("cat /opt/corral/corral.db", protected=other) == "protected_path"
    assert _rule("cat /opt/corral/corral.db") is None


def test_the_ascii_pre_check_matches_any_case() -> None:
    assert _rule("cat ~/.SSH/id_rsa") == "protected_path"
    assert _rule("cat /SRV/corral/data/corral.db") is None  # paths are case-sensitive
    assert _rule("cat ~/.Aws/credentials") == "protected_path"
    shielded = protection(HOME, PROTECTED)
    assert shielded.ascii_triggers is not None
    for word in ("~/.SSH/id_rsa", "x/.AWS", "Secrets", "MEM", "plain", "-c", "src/a.c"):
        assert shielded._triggered(word) == bool(shielded.triggers.search(word)), word


def test_non_ascii_words_and_paths_keep_unicode_case_folding() -> None:
    # U+017F (long s) folds to "s": the trigger fires, and the cwd inside ~/.ssh is what is hit.
    assert _rule("cat \u017fecrets", cwd="/home/agent/.ssh") == "protected_path"
    protected = ("/srv/data/\u017fecret.db",)
    shielded = protection(HOME, protected)
    assert shielded.ascii_triggers is None
    assert shielded._triggered("SECRET.DB")
    assert _rule("cat /srv/data/\u017fecret.db", protected=protected) == "protected_path"
    assert _rule("cat /srv/data/secret.db", protected=protected) is None


def test_a_path_met_again_after_a_cd_resolves_from_the_new_place() -> None:
    result = analyze(
        "cat a.txt; cd sub && cat a.txt; cat a.txt /dev/null; cat /dev/null",
        home=HOME,
        cwd=CWD,
        protected_paths=PROTECTED,
    )
    resolved = [ref.resolved for ref in result.paths if ref.text == "a.txt"]
    assert resolved == [
        (f"{CWD}/a.txt",),
        (f"{CWD}/sub/a.txt",),
        (f"{CWD}/a.txt", f"{CWD}/sub/a.txt"),  # the ``cd`` may have failed
    ]
    assert [ref.bases for ref in result.paths if ref.text == "a.txt"][1] == (("sub",),)
    assert not [ref for ref in result.paths if ref.text == "/dev/null"]


def test_a_path_is_resolved_against_each_analysis_own_home_and_cwd() -> None:
    def resolved(command: str, home: str, cwd: str) -> tuple[str, ...]:
        result = analyze(command, home=home, cwd=cwd, protected_paths=PROTECTED)
        return result.paths[0].resolved

    assert resolved("cat ~/a", HOME, CWD) == (f"{HOME}/a",)
    assert resolved("cat ~/a", "/home/other", CWD) == ("/home/other/a",)
    assert resolved("cat a.txt", HOME, CWD) == (f"{CWD}/a.txt",)
    assert resolved("cat a.txt", HOME, "/tmp") == ("/tmp/a.txt",)


def test_a_loop_variable_is_bound_unless_the_body_may_call_a_function() -> None:
    """Unconfined, a loop over literal items binds ``"$x"`` in a body that cannot change it;
    a call of a defined function could, and a name that only contains it cannot."""

    def loop_paths(command: str) -> list[str | None]:
        result = analyze(command, home=HOME, cwd=CWD, protected_paths=PROTECTED, unconfined=True)
        assert result.allowed, (result.rule, result.detail)
        return [ref.path for ref in result.paths if ref.text == '"$x"']

    defined = "f() { echo hi; }; g.h() { :; }; "
    assert loop_paths(defined + 'for x in a.txt; do cat "$x"; done') == ["a.txt"]
    assert loop_paths(defined + 'for x in a.txt; do cat "$x"; fx; done') == ["a.txt"]
    assert loop_paths(defined + 'for x in a.txt; do cat "$x"; f; done') == [None]
    assert loop_paths(defined + 'for x in a.txt; do cat "$x"; g.h; done') == [None]
    assert loop_paths(defined + 'for x in a.txt; do cat "$x"; echo g.hx; done') == ["a.txt"]
