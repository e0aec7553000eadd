"""fs_write and fs_edit: read before overwrite (from the conversation's rows), exact edits,
atomic replacement, feature and rights checks, approval by profile."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import corral
from corral.platform import Platform
from tests.conftest import DEMO
from tests.packages.drive.conftest import call, recording_model, tool_call

SKIP = [{"text": "(an earlier turn)"}]


def results(turn: Any, tool: str) -> list[dict[str, Any]]:
    return [
        r.data["result"] for r in turn.rows if r.kind == "tool_result" and r.data["tool"] == tool
    ]


async def test_writing_over_a_file_needs_a_read_in_this_conversation_first(
    platform: Platform, drive: Path
) -> None:
    (drive / "plan.md").write_text("old plan\n")
    write = tool_call("fs_write", uri="data://plan.md", content="new plan\n")
    recording_model(
        platform,
        "test:writer",
        [
            {"tool_calls": [write]},
            {"tool_calls": [tool_call("fs_read", uri="plan.md")]},
            {"tool_calls": [write]},
            {"text": "done"},
        ],
    )
    turn = await platform.chat("rewrite the plan", model="test:writer", profile="auto")
    assert turn.status == "finished"
    refused, allowed = results(turn, "fs_write")
    assert refused["error_code"] == "not_read"
    assert "you have not read it in this conversation" in refused["content"][0]["text"]
    assert allowed["status"] == "ok", allowed
    assert (drive / "plan.md").read_text() == "new plan\n"


async def test_the_read_is_remembered_across_a_restart_but_a_change_since_is_not_ignored(
    data_dir: Path,
) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        drive = data_dir / "drive"
        (drive / "notes.txt").write_text("v1\n")
        recording_model(
            platform,
            "test:reader",
            [{"tool_calls": [tool_call("fs_read", uri="data://notes.txt")]}, {"text": "read"}],
        )
        turn = await platform.chat("read it", model="test:reader", profile="auto")
        conversation = turn.conversation_id
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        write = tool_call("fs_write", uri="data://notes.txt", content="v2\n")
        # The k-th response of a conversation is turns[k]: two came before.
        recording_model(
            platform, "test:after", [*SKIP * 2, {"tool_calls": [write]}, {"text": "ok"}]
        )
        turn = await platform.chat("now write", conversation_id=conversation, model="test:after")
        assert results(turn, "fs_write")[0]["status"] == "ok"
        assert (drive / "notes.txt").read_text() == "v2\n"

        # Someone else changes the file: the model's knowledge of it is stale.
        (drive / "notes.txt").write_text("changed by a person\n")
        os.utime(drive / "notes.txt", ns=(1, 1))
        write = tool_call("fs_write", uri="data://notes.txt", content="v3\n")
        recording_model(
            platform, "test:stale", [*SKIP * 4, {"tool_calls": [write]}, {"text": "ok"}]
        )
        turn = await platform.chat("again", conversation_id=conversation, model="test:stale")
        assert results(turn, "fs_write")[0]["error_code"] == "changed_since_read"
        assert (drive / "notes.txt").read_text() == "changed by a person\n"


async def test_a_read_in_another_conversation_does_not_count(
    platform: Platform, drive: Path
) -> None:
    (drive / "x.txt").write_text("x\n")
    recording_model(
        platform,
        "test:one",
        [{"tool_calls": [tool_call("fs_read", uri="data://x.txt")]}, {"text": "read"}],
    )
    await platform.chat("read", model="test:one", profile="auto")
    recording_model(
        platform,
        "test:two",
        [{"tool_calls": [tool_call("fs_write", uri="data://x.txt", content="y")]}, {"text": "-"}],
    )
    other = await platform.chat("write", model="test:two", profile="auto")
    assert results(other, "fs_write")[0]["error_code"] == "not_read"


async def test_new_files_and_overwrite_true_need_no_read(platform: Platform, drive: Path) -> None:
    created = await call(platform, "fs_write", uri="data://deep/er/new.txt", content="a\nb\n")
    assert created.status == "ok", created.text
    assert "created, 4 bytes, 2 lines" in created.text
    assert (drive / "deep" / "er" / "new.txt").read_text() == "a\nb\n"
    refused = await call(platform, "fs_write", uri="data://deep/er/new.txt", content="c")
    assert refused.error_code == "not_read"
    (drive / "deep" / "er" / "new.txt").chmod(0o600)
    forced = await call(
        platform, "fs_write", uri="data://deep/er/new.txt", content="c", overwrite=True
    )
    assert forced.status == "ok" and "replaced" in forced.text
    assert (drive / "deep" / "er" / "new.txt").read_text() == "c"
    assert (drive / "deep" / "er" / "new.txt").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in (drive / "deep" / "er").iterdir()] == ["new.txt"]  # no temp left
    folder = await call(platform, "fs_write", uri="data://deep", content="c", overwrite=True)
    assert folder.error_code == "is_a_folder"


async def test_edit_replaces_one_exact_occurrence_and_shows_a_diff(
    platform: Platform, drive: Path
) -> None:
    (drive / "app.py").write_text("def f():\n    return 1\n\ndef g():\n    return 1\n")
    twice = await call(platform, "fs_edit", uri="data://app.py", old="return 1", new="return 2")
    assert twice.error_code == "old_not_unique"
    assert "appears 2 times" in twice.text and "at lines 2, 5" in twice.text
    assert (drive / "app.py").read_text().count("return 1") == 2  # nothing changed

    once = await call(
        platform, "fs_edit", uri="data://app.py", old="g():\n    return 1", new="g():\n    return 2"
    )
    assert once.status == "ok", once.text
    assert "-    return 1" in once.text and "+    return 2" in once.text
    assert (drive / "app.py").read_text() == "def f():\n    return 1\n\ndef g():\n    return 2\n"

    absent = await call(platform, "fs_edit", uri="data://app.py", old="return 3", new="x")
    assert absent.error_code == "old_not_found"
    indented = await call(platform, "fs_edit", uri="data://app.py", old="  return 1  ", new="x")
    assert indented.error_code == "old_not_found" and "indentation" in indented.text

    every = await call(
        platform, "fs_edit", uri="data://app.py", old="return", new="yield", replace_all=True
    )
    assert every.status == "ok" and "2 replacement(s)" in every.text
    assert (drive / "app.py").read_text().count("yield") == 2


async def test_edit_refuses_binary_files(platform: Platform, drive: Path) -> None:
    (drive / "b.bin").write_bytes(b"abc\x00def")
    result = await call(platform, "fs_edit", uri="data://b.bin", old="abc", new="x")
    assert result.error_code == "binary"


async def test_writing_needs_the_feature_and_write_rights(
    platform: Platform, drive: Path, member: str
) -> None:
    await platform.identity.create_role("reader", ["drive.read"])
    await platform.identity.create_user("rex", "reader")
    await platform.admin.grant_source(
        "data", principal_kind="role", principal="reader", rights="rw"
    )
    no_feature = await call(platform, "fs_write", user="rex", uri="data://r.txt", content="x")
    assert no_feature.error_code == "feature_missing" and "drive.write" in no_feature.text
    await platform.admin.grant_source("data", principal_kind="role", principal="member", rights="r")
    read_only = await call(platform, "fs_write", user=member, uri="data://r.txt", content="x")
    assert read_only.error_code == "policy_denied"
    assert "source 'data' grants you r;" in read_only.text
    edit = await call(platform, "fs_edit", user=member, uri="data://r.txt", old="a", new="b")
    assert edit.error_code == "policy_denied"
    assert not (drive / "r.txt").exists()


async def test_balanced_asks_before_writing_but_not_before_reading(
    platform: Platform, drive: Path
) -> None:
    (drive / "a.txt").write_text("a\n")
    read = await platform.call_tool("fs_read", {"uri": "data://a.txt"}, profile="balanced")
    assert read.status == "ok"
    listed = await platform.call_tool("fs_list", {}, profile="balanced")
    assert listed.status == "ok"
    found = await platform.call_tool("fs_search", {"pattern": "a"}, profile="balanced")
    assert found.status == "ok"
    write = await platform.call_tool(
        "fs_write", {"uri": "data://b.txt", "content": "b"}, profile="balanced"
    )
    assert write.error_code == "approval_pending"
    edit = await platform.call_tool(
        "fs_edit", {"uri": "data://a.txt", "old": "a", "new": "b"}, profile="balanced"
    )
    assert edit.error_code == "approval_pending"
    assert not (drive / "b.txt").exists()
    denied = await platform.call_tool(
        "fs_write", {"uri": "/etc/passwd", "content": "b"}, profile="balanced"
    )
    assert denied.error_code == "policy_denied"  # refused before anyone is asked
