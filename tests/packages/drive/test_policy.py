"""URI policy on every drive tool: symlinks out, the platform's own files, the private area,
and the durable URIs that resolve only for their owner."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import corral
from corral.platform import Platform
from tests.conftest import DEMO
from tests.packages.drive.conftest import call, tool_call
from tests.shell.conftest import shells

EVERY_TOOL: list[tuple[str, dict[str, Any]]] = [
    ("fs_read", {}),
    ("fs_write", {"content": "x", "overwrite": True}),
    ("fs_edit", {"old": "secret", "new": "x"}),
    ("fs_list", {}),
    ("fs_search", {"pattern": "secret"}),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder no source covers, holding a file worth stealing."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret\n")
    return folder


@pytest.mark.parametrize(("tool", "extra"), EVERY_TOOL, ids=[t for t, _ in EVERY_TOOL])
async def test_a_symlink_out_of_the_drive_is_refused(
    platform: Platform, drive: Path, outside: Path, tool: str, extra: dict[str, Any]
) -> None:
    (drive / "door").symlink_to(outside)
    (drive / "file-door.txt").symlink_to(outside / "secret.txt")
    for target in ("data://door/secret.txt", "data://file-door.txt", "door", "data://door"):
        if tool in ("fs_list", "fs_search") and "secret.txt" in target:
            continue
        result = await call(platform, tool, uri=target, **extra)
        assert result.error_code == "policy_denied", (target, result.text)
        assert "not covered by any source" in result.text
    assert (outside / "secret.txt").read_text() == "secret\n"


async def test_walking_tools_show_links_but_never_follow_them(
    platform: Platform, drive: Path, outside: Path
) -> None:
    (drive / "door").symlink_to(outside)
    (drive / "mine.txt").write_text("not a secret\n")
    listed = await call(platform, "fs_list", depth=3)
    assert f"door -> {outside}" in listed.text
    assert "secret.txt" not in listed.text
    for engine_rg in (True, False):
        drive_service = _drive(platform)
        kept = drive_service.rg
        drive_service.rg = kept if engine_rg else None
        try:
            found = await call(platform, "fs_search", pattern="secret")
        finally:
            drive_service.rg = kept
        assert found.text.splitlines()[1:] == ["data://mine.txt:1: not a secret"]


async def add_source(
    platform: Platform, name: str, root: Path, rights: str, *, role: str = "owner"
) -> None:
    await platform.admin.add_source(name, str(root))
    await platform.admin.grant_source(name, principal_kind="role", principal=role, rights=rights)


def _drive(platform: Platform) -> Any:
    from corral.packages.drive.service import Drive

    return platform.services.require(Drive)


@pytest.mark.parametrize(("tool", "extra"), EVERY_TOOL, ids=[t for t, _ in EVERY_TOOL])
async def test_the_platform_database_is_refused(
    platform: Platform, data_dir: Path, tool: str, extra: dict[str, Any]
) -> None:
    await add_source(platform, "whole", data_dir, "rwx")
    database = data_dir / "corral.db"
    for target in (str(database), "whole://corral.db", "whole://CORRAL.DB", "../corral.db"):
        result = await call(platform, tool, uri=target, **extra)
        assert result.error_code == "policy_denied", (target, result.text)
    assert database.stat().st_size > 0


async def test_walking_a_source_around_the_platform_skips_its_files(
    platform: Platform, data_dir: Path
) -> None:
    await add_source(platform, "whole", data_dir, "rwx")
    listed = await call(platform, "fs_list", uri="whole://", depth=2)
    assert "corral.db" not in listed.text and "private" not in listed.text
    assert "entries you may not read were left out" in listed.text
    found = await call(platform, "fs_search", uri="whole://", pattern="SQLite format", hidden=True)
    assert "corral.db" not in found.text


@pytest.mark.parametrize(("tool", "extra"), EVERY_TOOL, ids=[t for t, _ in EVERY_TOOL])
async def test_the_private_area_is_refused_however_it_is_spelled(
    platform: Platform, drive: Path, tool: str, extra: dict[str, Any]
) -> None:
    area = drive / ".corral" / "conversations" / "c_1"
    area.mkdir(parents=True)
    (area / "secret.txt").write_text("secret\n")
    (drive / "alias").symlink_to(drive / ".corral")
    for target in (
        "data://.corral/conversations/c_1/secret.txt",
        ".corral/conversations/c_1/secret.txt",
        f"{drive}/.corral/conversations/c_1/secret.txt",
        "data://alias/conversations/c_1/secret.txt",
        "data://notes/../.corral/conversations/c_1/secret.txt",
        "data://.CORRAL/conversations/c_1/secret.txt",
    ):
        result = await call(platform, tool, uri=target, **extra)
        assert result.error_code == "policy_denied", (target, result.text)
    assert (area / "secret.txt").read_text() == "secret\n"


async def test_walking_the_drive_with_hidden_entries_never_enters_the_private_area(
    platform: Platform, drive: Path
) -> None:
    (drive / ".corral").mkdir(exist_ok=True)  # made at start-up since issue 28
    (drive / ".corral" / "secret.txt").write_text("secret\n")
    (drive / ".visible.txt").write_text("secret\n")
    for rg in (True, False):
        service = _drive(platform)
        kept = service.rg
        service.rg = kept if rg else None
        try:
            found = await call(platform, "fs_search", pattern="secret", hidden=True)
        finally:
            service.rg = kept
        assert "data://.visible.txt:1: secret" in found.text
        assert ".corral" not in found.text.split("\n[")[0]
    listed = await call(platform, "fs_list", hidden=True, depth=3)
    assert ".visible.txt" in listed.text and ".corral" not in listed.text


async def test_a_nested_source_without_read_rights_is_left_out_of_walks(
    platform: Platform, drive: Path, member: str
) -> None:
    (drive / "vault").mkdir()
    (drive / "vault" / "k.txt").write_text("secret\n")
    (drive / "open.txt").write_text("secret\n")
    await add_source(platform, "vault", drive / "vault", "r", role="owner")
    listed = await call(platform, "fs_list", user=member, depth=3)
    assert "open.txt" in listed.text and "vault" not in listed.text.split("\n[")[0]
    found = await call(platform, "fs_search", user=member, pattern="secret")
    assert "data://open.txt:1: secret" in found.text and "k.txt" not in found.text
    direct = await call(platform, "fs_read", user=member, uri="data://vault/k.txt")
    assert direct.error_code == "policy_denied"


# -- durable URIs ------------------------------------------------------------------------------


@pytest.fixture
async def unconfined(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, sandbox="unconfined", package_paths=[DEMO]) as opened:
        yield opened


async def test_a_background_shell_log_is_read_by_its_starter_only(unconfined: Platform) -> None:
    await unconfined.identity.create_user("mia", "member")
    started = await unconfined.call_tool(
        "execute", {"command": "echo hello-from-the-log", "background": True}
    )
    assert started.status == "ok", started.text
    assert started.data is not None
    shell_id = started.data["shell_id"]
    await shells(unconfined).background.wait_ended(shell_id, 20)

    output = await call(unconfined, "fs_read", uri=started.data["output_uri"])
    assert output.status == "ok", output.text
    rows = [json.loads(line.split("\t", 1)[1]) for line in output.text.splitlines()[1:]]
    assert any("hello-from-the-log" in row["text"] for row in rows)
    status = await call(unconfined, "fs_read", uri=started.data["status_uri"])
    assert '"exit_code": 0' in status.text and f'"id": "{shell_id}"' in status.text

    for uri in (started.data["output_uri"], started.data["status_uri"]):
        other = await call(unconfined, "fs_read", user="mia", uri=uri)
        assert other.error_code == "policy_denied"
        assert "only for the person who started it" in other.text
    write = await call(
        unconfined, "fs_write", uri=started.data["output_uri"], content="x", overwrite=True
    )
    assert write.error_code == "policy_denied" and "read-only" in write.text
    unknown = await call(unconfined, "fs_read", uri="corral://settings")
    assert unknown.error_code == "policy_denied" and "not a platform URI" in unknown.text


async def test_a_delegate_runs_files_are_read_by_its_owner_only(
    platform: Platform, tmp_path: Path, member: str
) -> None:
    child = tmp_path / "child.json"
    child.write_text(json.dumps({"turns": [{"text": "child answer"}]}))
    parent = tmp_path / "parent.json"
    delegate = tool_call("delegate", task="say something", model=f"script:{child}")
    parent.write_text(json.dumps({"turns": [{"tool_calls": [delegate]}, {"text": "done"}]}))
    turn = await platform.chat("go", model=f"script:{parent}", profile="auto")
    result = next(r for r in turn.rows if r.kind == "tool_result").data["result"]
    status_uri, transcript_uri = (result["data"]["status_uri"], result["data"]["transcript_uri"])

    status = await call(platform, "fs_read", uri=status_uri)
    assert status.status == "ok", status.text and '"status": "finished"' in status.text
    transcript = await call(platform, "fs_read", uri=transcript_uri)
    assert "child answer" in transcript.text
    for uri in (status_uri, transcript_uri):
        other = await call(platform, "fs_read", user=member, uri=uri)
        assert other.error_code == "policy_denied" and "only for its owner" in other.text
    edit = await call(platform, "fs_edit", uri=transcript_uri, old="child", new="x")
    assert edit.error_code == "policy_denied" and "read-only" in edit.text
    # Another run's id under this conversation's folder does not pass the owner check.
    forged = status_uri.replace(result["data"]["run_id"], "r_0000000000000000")
    assert (await call(platform, "fs_read", uri=forged)).error_code == "policy_denied"
    assert (platform.runtime.kernel.settings.drive_dir / status_uri[7:]).is_file()
