"""What the analysis extracts for the URI-policy gate: commands, write targets, read paths,
redirects and ``cd`` moves, resolved against the cwd as the shell would move."""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor

import pytest

import corral.shell.analysis as analysis_module
from corral.errors import PolicyDenied
from corral.shell.analysis import (
    MAX_COMMAND_BYTES,
    Analysis,
    PathRef,
    analyze,
    resolve_chain,
)

CWD = "/srv/p"
HOME = "/home/agent"


def run(command: str) -> Analysis:
    result = analyze(command, home=HOME, cwd=CWD)
    assert result.allowed, (command, result.rule, result.word, result.detail)
    return result


def paths(result: Analysis, command: str | None = None) -> list[tuple[str, str | None, str]]:
    return [
        (ref.access, ref.path, ref.origin)
        for ref in result.paths
        if command is None or ref.command == command
    ]


def only(result: Analysis, text: str) -> PathRef:
    (ref,) = [r for r in result.paths if r.text == text]
    return ref


# -- write targets and read paths ------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cp a.txt b.txt dest/", [("read", "a.txt"), ("read", "b.txt"), ("write", "dest")]),
        ("cp -t dest a b", [("write", "dest"), ("read", "a"), ("read", "b")]),
        ("mv old new", [("write", "old"), ("write", "new")]),
        ("rm -f x.log", [("write", "x.log")]),
        ("touch a b", [("write", "a"), ("write", "b")]),
        ("mkdir -p -m 755 out/x", [("write", "out/x")]),
        ("ln -s ../t link", [("read", "../t"), ("write", "link")]),
        ("sed -i 's/a/b/' f.txt", [("write", "f.txt")]),
        ("sed 's/a/b/' f.txt", [("read", "f.txt")]),
        ("tar -xzf a.tgz -C out", [("read", "a.tgz"), ("write", "out")]),
        ("tar czf a.tgz src", [("write", "a.tgz"), ("read", "src")]),
        ("dd if=in.img of=out.img bs=1M", [("read", "in.img"), ("write", "out.img")]),
        ("curl -fsSL https://x.y/z -o page.html", [("write", "page.html")]),
        ("tee -a log.txt", [("write", "log.txt")]),
        ("truncate -s 0 big.log", [("write", "big.log")]),
        ("chmod -R u+w build", [("write", "build")]),
        ("git commit -m 'msg'", [("write", ".")]),
        ("git status", []),
        ("grep -rn needle src/", [("read", "src")]),
        ("cat /etc/hosts README.md", [("read", "/etc/hosts"), ("read", "README.md")]),
        ("echo /etc/passwd", []),
        ("python3 tool.py --out=/tmp/x", [("read", "tool.py")]),
        ("sort -o sorted.txt in.txt", [("write", "sorted.txt"), ("read", "in.txt")]),
        ("unzip pkg.zip -d vendor", [("read", "pkg.zip"), ("write", "vendor")]),
    ],
)
def test_access_of_arguments(command: str, expected: list[tuple[str, str]]) -> None:
    result = run(command)
    got = [(access, path) for access, path, origin in paths(result) if origin == "argument"]
    assert got == expected


def test_option_values_that_are_paths_are_read() -> None:
    result = run("tool --config=/etc/tool.conf --level=3")
    assert paths(result) == [("read", "/etc/tool.conf", "option")]


def test_mutating_flag() -> None:
    result = run("git status; git add -A; ls > out.txt; cp a b")
    assert [(c.name, c.mutating) for c in result.commands] == [
        ("git", False),
        ("git", True),
        ("ls", True),
        ("cp", True),
    ]


def test_glob_paths_are_patterns_for_the_gate() -> None:
    ref = only(run("rm -f build/*.o '*x'*"), "build/*.o")
    assert ref.glob and ref.path == "build/*.o" and ref.access == "write"
    quoted = only(run("rm -f '*x'*"), "'*x'*")
    assert quoted.glob and quoted.path == "[*]x*"


def test_unknown_paths_have_no_path() -> None:
    ref = only(run('rm -f "$target"'), '"$target"')
    assert ref.path is None and ref.access == "write"
    assert ref.resolve(CWD) is None


# -- redirects -----------------------------------------------------------------------------


def test_redirect_targets_and_modes() -> None:
    result = run("sort < in.txt > out.txt 2>> err.log 2>&1")
    (command,) = result.commands
    assert [(r.operator, r.fd, r.target.value, r.access) for r in command.redirects] == [
        ("<", None, "in.txt", "read"),
        (">", None, "out.txt", "write"),
        (">>", 2, "err.log", "write"),
    ]
    assert paths(result) == [
        ("read", "in.txt", "redirect"),
        ("write", "out.txt", "redirect"),
        ("write", "err.log", "redirect"),
    ]


def test_here_strings_and_null_devices_are_not_paths() -> None:
    result = run("grep x <<< 'a/b' > /dev/null 2>&1")
    assert result.paths == ()


def test_redirect_of_a_compound_belongs_to_no_single_command() -> None:
    result = run("{ echo a; echo b; } > both.txt")
    assert paths(result) == [("write", "both.txt", "redirect")]
    assert only(result, "both.txt").command == ""


def test_trailing_redirect_binds_to_the_last_command_of_a_list() -> None:
    result = run("cd build && make > log.txt")
    ref = only(result, "log.txt")
    assert ref.command == "make"
    assert ref.resolved == ("/srv/p/build/log.txt",)


# -- cd moves ----------------------------------------------------------------------------


def test_cd_moves_later_relative_paths() -> None:
    result = run("cd sub && touch f")
    assert only(result, "f").resolved == ("/srv/p/sub/f",)
    assert [(m.kind, m.target.value if m.target else None, m.scoped) for m in result.cd_moves] == [
        ("cd", "sub", False)
    ]
    assert only(result, "sub").access == "exec"


def test_a_cd_that_may_fail_leaves_both_bases() -> None:
    result = run("cd sub; touch f")
    assert set(only(result, "f").resolved) == {"/srv/p/f", "/srv/p/sub/f"}


def test_cd_or_exit_leaves_only_the_new_base() -> None:
    result = run("cd sub || exit 1; touch f")
    assert only(result, "f").resolved == ("/srv/p/sub/f",)


def test_cd_in_a_subshell_does_not_move_the_parent() -> None:
    result = run("(cd sub && touch f); touch g")
    assert only(result, "f").resolved == ("/srv/p/sub/f",)
    assert only(result, "g").resolved == ("/srv/p/g",)
    assert result.cd_moves[0].scoped


def test_cd_in_a_pipeline_element_is_scoped() -> None:
    result = run("cd sub | cat; touch g")
    assert only(result, "g").resolved == ("/srv/p/g",)


def test_pushd_and_popd() -> None:
    result = run("pushd a && touch x && popd && touch y")
    assert only(result, "x").resolved == ("/srv/p/a/x",)
    assert only(result, "y").resolved == ("/srv/p/y",)
    assert [m.kind for m in result.cd_moves] == ["pushd", "popd"]


def test_absolute_cd_and_cd_home() -> None:
    result = run("cd /tmp && touch a && cd && touch b")
    assert only(result, "a").resolved == ("/tmp/a",)
    assert only(result, "b").resolved == (f"{HOME}/b",)


def test_unknown_cd_target_makes_relative_paths_unresolvable() -> None:
    result = run('cd "$DIR" && rm -f x')
    ref = only(result, "x")
    assert ref.bases == ((None,),)
    assert ref.resolved == () and ref.resolve(CWD) is None


def test_cd_in_a_loop_makes_the_base_uncertain() -> None:
    result = run("for d in a b; do cd $d; done; touch z")
    assert only(result, "z").resolve(CWD) is None


def test_command_local_directories() -> None:
    result = run("git -C repo commit -m x && make -C lib && env -C out touch f")
    resolved = {ref.command: ref.resolved for ref in result.paths}
    assert resolved["git"] == ("/srv/p/repo",)
    assert resolved["touch"] == ("/srv/p/out/f",)


def test_resolve_without_a_cwd_given() -> None:
    result = analyze("cd a && touch b", home=HOME)
    ref = only(result, "b")
    assert ref.resolved == ()
    assert ref.resolve("/w") == ("/w/a/b",)
    assert resolve_chain("/w", ("x", "../y")) == "/w/y"
    assert resolve_chain("/w", ("x", None)) is None


def test_tilde_resolves_with_a_home() -> None:
    assert only(run("touch ~/notes.md"), "~/notes.md").resolved == (f"{HOME}/notes.md",)


# -- nesting and wrappers ----------------------------------------------------------------


def test_nested_scripts_are_flattened_with_their_depth() -> None:
    result = run("bash -c 'cd src && bash -c \"touch out.o\"'")
    assert [(c.name, c.depth) for c in result.commands] == [("bash", 0), ("bash", 1), ("touch", 2)]
    assert only(result, "out.o").resolved == ("/srv/p/src/out.o",)


def test_wrappers_are_recorded_on_the_command_they_run() -> None:
    result = run("timeout 5 env A=1 nice -n 3 rm -f x")
    (command,) = result.commands
    assert command.name == "rm"
    assert command.wrappers == ("timeout", "env", "nice")
    assert [w.value for w in command.argv] == ["rm", "-f", "x"]


def test_xargs_and_find_exec_have_dynamic_arguments() -> None:
    result = run("find . -name '*.o' -exec rm -f {} + ; ls | xargs -n1 wc -l")
    dynamic = {(c.name, c.dynamic_args, c.wrappers) for c in result.commands}
    assert ("rm", True, ("find",)) in dynamic
    assert ("wc", True, ("xargs",)) in dynamic
    find = next(c for c in result.commands if c.name == "find")
    assert find.mutating


def test_git_config_command_is_analysed_as_a_command() -> None:
    result = run("git -c core.pager='less -R' log")
    assert [c.name for c in result.commands] == ["less", "git"]


# -- verdict API ---------------------------------------------------------------------------


def test_refusal_as_a_policy_error() -> None:
    refused = analyze("sudo rm -rf /tmp/x")
    error = refused.error()
    assert isinstance(error, PolicyDenied)
    assert error.code == "policy_denied"
    assert error.data == {"guard": "analysis", "rule": "blocked_binary", "word": "sudo"}
    with pytest.raises(PolicyDenied):
        refused.raise_if_refused()
    with pytest.raises(ValueError):
        analyze("ls").error()
    analyze("ls").raise_if_refused()


def test_refusals_name_the_word_as_written() -> None:
    result = analyze("ls && $'\\x73udo' id")
    assert result.rule == "blocked_binary"
    assert result.word == "$'\\x73udo'"
    assert "sudo" in result.detail


def test_too_large() -> None:
    result = analyze("echo " + "x" * MAX_COMMAND_BYTES)
    assert result.rule == "too_large"


def test_protected_cwd() -> None:
    result = analyze("ls", cwd="/srv/corral/data/keys", protected_paths=["/srv/corral/data/keys"])
    assert result.rule == "protected_path"


def test_protected_paths_with_a_tilde_expand_with_the_home() -> None:
    result = analyze("cat ~/.corral/corral.db", home=HOME, protected_paths=["~/.corral"])
    assert result.rule == "protected_path"
    assert analyze("cat ~/.corral-notes", home=HOME, protected_paths=["~/.corral"]).allowed


def test_deep_nesting_is_refused_with_its_rule() -> None:
    command = "ls"
    for level in range(1, 6):
        command = f"sh -c {shlex.quote(command)}"
        assert analyze(command).allowed == (level <= 4)
    assert analyze(command).rule == "nesting_too_deep"


def test_analysis_is_thread_safe() -> None:
    commands = ["ls -la", "sudo x", "cd a && touch b", "rm -rf /", "git status"] * 40
    expected = [analyze(c, cwd=CWD).rule for c in commands]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda c: analyze(c, cwd=CWD).rule, commands))
    assert got == expected


def test_public_names() -> None:
    names = analysis_module.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))
    assert {"analyze", "Analysis", "Command", "PathRef", "Redirect", "CdMove", "Word"} <= set(names)
    for name in names:
        assert getattr(analysis_module, name) is not None


def test_long_chains_pass_and_deep_nesting_is_refused() -> None:
    chain = analyze(" && ".join(["cd a", "touch b"] * 1500), cwd=CWD)
    assert chain.allowed and len(chain.commands) == 1500
    assert analyze("echo " + "$(" * 300 + "ls" + ")" * 300).rule == "too_large"
