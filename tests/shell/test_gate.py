"""The URI-policy gate, through ``Platform.check_command``: nothing runs here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import corral
from corral.platform import Platform


@pytest.fixture
async def layout(platform: Platform, tmp_path: Path, drive: Path) -> dict[str, Path]:
    docs, vault = tmp_path / "docs", tmp_path / "vault"
    for folder in (docs, vault, drive / "sub"):
        folder.mkdir(parents=True)
    (docs / "readme.md").write_text("read me")
    (vault / "key.txt").write_text("k")
    (drive / "a.txt").write_text("a")
    (drive / "sub" / "b.log").write_text("b")
    os.symlink(vault / "key.txt", drive / "link.txt")
    await platform.admin.add_source("docs", str(docs))
    await platform.admin.add_source("vault", str(vault))
    await platform.admin.grant_source("docs", principal_kind="role", principal="owner", rights="r")
    return {"docs": docs, "vault": vault, "drive": drive, "tmp": tmp_path}


async def test_ordinary_commands_in_the_drive_pass(
    platform: Platform, layout: dict[str, Path]
) -> None:
    docs = layout["docs"]
    for command in (
        "cat a.txt > out.txt",
        "ls -la sub && wc -l sub/*.log",
        f"cat {docs}/readme.md | wc -c",
        f"cd {docs} && cat readme.md",
        "echo hi 2>/dev/null",
        "mkdir -p build && cp a.txt build/",
    ):
        verdict = await platform.check_command(command)
        assert verdict.allowed, (command, verdict)
        assert verdict.plane == "app" and verdict.cwd == str(layout["drive"].resolve())


@pytest.mark.parametrize(
    ("command", "rule", "word"),
    [
        ("cat {docs}/readme.md > {docs}/copy.md", "rights", "{docs}/copy.md"),
        ("cp a.txt {docs}/x", "rights", "{docs}/x"),
        ("cat {vault}/key.txt", "rights", "{vault}/key.txt"),
        ("cat /srv/nowhere/file.txt", "uncovered", "/srv/nowhere/file.txt"),
        ("rm {docs}/*.md", "rights", "{docs}/*.md"),
        ("cat {tmp}/v*/key.txt", "rights", "{tmp}/v*/key.txt"),
        ("cat link.txt", "rights", "link.txt"),
        ('bash -c "cp a.txt {docs}/x"', "rights", "{docs}/x"),
        ("bash -c 'sh -c \"cat {vault}/key.txt\"'", "rights", "{vault}/key.txt"),
        ("echo x >> {docs}/readme.md", "rights", "{docs}/readme.md"),
    ],
)
async def test_paths_are_refused_with_rule_and_word(
    platform: Platform, layout: dict[str, Path], command: str, rule: str, word: str
) -> None:
    names = {k: str(v) for k, v in layout.items()}
    verdict = await platform.check_command(command.format(**names))
    assert not verdict.allowed
    assert (verdict.guard, verdict.rule, verdict.word) == ("uri_policy", rule, word.format(**names))
    assert verdict.path is not None and verdict.detail


async def test_a_literal_cd_moves_the_base_of_later_paths(
    platform: Platform, layout: dict[str, Path]
) -> None:
    docs = layout["docs"]
    assert (await platform.check_command("rm readme.md")).allowed  # the drive has none
    verdict = await platform.check_command(f"cd {docs} && rm readme.md")
    assert (verdict.rule, verdict.word, verdict.path) == (
        "rights",
        "readme.md",
        str(docs / "readme.md"),
    )
    nested = await platform.check_command(f"bash -c 'cd {docs}; touch new.txt'")
    assert nested.rule == "rights" and nested.path == str(docs / "new.txt")


async def test_cwd_needs_exec_and_must_be_a_folder(
    platform: Platform, layout: dict[str, Path]
) -> None:
    read_only = await platform.check_command("ls", cwd="docs://")
    assert (read_only.guard, read_only.rule) == ("uri_policy", "rights")
    assert "exec access" in read_only.detail
    toolchain = await platform.check_command("ls", cwd="/usr")
    assert toolchain.rule == "rights"
    missing = await platform.check_command("ls", cwd="data://nope")
    assert missing.rule == "cwd_not_directory"
    assert (await platform.check_command("ls", cwd="data://sub")).allowed
    unknown = await platform.check_command("ls", cwd="ghost://x")
    assert not unknown.allowed and "no registered source" in unknown.detail


async def test_analysis_refusals_name_the_guard(
    platform: Platform, layout: dict[str, Path]
) -> None:
    verdict = await platform.check_command("timeout 5 sudo ls")
    assert (verdict.guard, verdict.rule, verdict.word) == ("analysis", "blocked_binary", "sudo")
    secret = await platform.check_command("cat ../corral.db")
    assert (secret.guard, secret.rule) == ("analysis", "protected_path")


async def test_the_drive_private_area_is_out_of_every_commands_reach(
    platform: Platform, layout: dict[str, Path], data_dir: Path
) -> None:
    """Delegate run folders live in data://.corral; only the drive's owner-checked URIs
    read them, never a command (which would let anyone with exec read others' runs)."""
    run_file = data_dir / "drive" / ".corral" / "conversations" / "c_1" / "runs" / "r_1"
    run_file.mkdir(parents=True)
    (run_file / "meta.json").write_text("{}")
    spellings = (
        "cat .corral/conversations/c_1/runs/r_1/meta.json",
        "cat ./.CORRAL/conversations/c_1/runs/r_1/meta.json",
        "ls -R .corral",
        "cd .corral && cat conversations/c_1/runs/r_1/meta.json",
        "echo x > .corral/conversations/c_1/note",
    )
    for command in spellings:
        verdict = await platform.check_command(command)
        assert not verdict.allowed, command
    inside = await platform.check_command("ls", cwd="data://.corral")
    assert not inside.allowed


async def test_scratch_and_unknown_paths_pass_only_inside_the_sandbox(
    platform: Platform, layout: dict[str, Path], data_dir: Path
) -> None:
    loop = 'for f in *.txt; do sed -i s/a/b/ "$f"; done'
    for command in (loop, "echo x > /tmp/scratch.txt", "cat ~/notes.txt"):
        assert (await platform.check_command(command)).allowed, command
    await platform.close()
    async with corral.open(data_dir, sandbox="unconfined") as bare:
        # Without the sandbox each item of the loop is judged: link.txt leads into the vault.
        each = await bare.check_command(loop)
        assert (each.rule, each.word) == ("rights", '"$f"')
        assert (await bare.check_command('for f in sub/*.log; do wc -l "$f"; done')).allowed
        dynamic = await bare.check_command('for f in $(ls); do sed -i s/a/b/ "$f"; done')
        assert (dynamic.rule, dynamic.word) == ("dynamic_path", '"$f"')
        scratch = await bare.check_command("echo x > /tmp/scratch.txt")
        assert scratch.rule == "uncovered"
        # ~ is the command's own fresh HOME, which no source covers.
        home = await bare.check_command("cat ~/notes.txt")
        assert home.rule == "uncovered" and home.confinement == "unconfined"


async def test_another_user_is_judged_by_their_own_rights(
    platform: Platform, layout: dict[str, Path]
) -> None:
    await platform.identity.create_role("dev", ["core.exec"])
    await platform.identity.create_user("dana", "dev")
    verdict = await platform.check_command("ls", user="dana")
    assert verdict.rule == "rights" and verdict.word == "data root"
    await platform.admin.grant_source("data", principal_kind="role", principal="dev", rights="rx")
    assert (await platform.check_command("cat a.txt", user="dana")).allowed
    write = await platform.check_command("cat a.txt > b.txt", user="dana")
    assert write.rule == "rights" and write.word == "b.txt"


async def test_unconfined_tilde_dot_dot_is_the_real_home_s_parent(
    layout: dict[str, Path], data_dir: Path
) -> None:
    """Finding 1: without a sandbox home, ``~/..`` once collapsed before ``~`` was known."""
    import tempfile

    async with corral.open(data_dir, sandbox="unconfined") as bare:
        database = bare.settings.database_path
        assert database is not None
        climb = "~/../" + str(Path(database).relative_to(tempfile.gettempdir()))
        for command in (
            f"cat {climb}",
            f"cd sub && cat {climb}",
            f"rm -f {climb}-wal",
            f"cd sub/../sub && cp {climb} copy.db",
        ):
            verdict = await bare.check_command(command)
            assert not verdict.allowed and verdict.rule == "protected_path", (command, verdict)
        shadow = await bare.check_command("cd sub && cat ~/../../../../../../../etc/shadow")
        assert not shadow.allowed and shadow.rule == "protected_path"
        outside = await bare.check_command("cat ~/../elsewhere.txt")
        assert not outside.allowed and outside.rule == "uncovered"
        assert outside.path == str(Path(tempfile.gettempdir()) / "elsewhere.txt")
