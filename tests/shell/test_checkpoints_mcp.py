"""Checkpoints around calls of a real stdio MCP server (tests/fixtures/mcp_files_server.py)
that an administrator runs in a local source: a tool not read-only keeps one like
``execute``, a rewind puts the file back, and a tool the trusted server calls read-only keeps
none."""

from __future__ import annotations

import asyncio
from pathlib import Path

from corral.platform import Platform
from tests.packages.core.conftest import MCP_SERVER
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap
from tests.shell.test_rewind_run import Script

pytestmark = needs_bwrap

FILES_SERVER = [MCP_SERVER[0], str(Path(MCP_SERVER[1]).parent / "mcp_files_server.py")]


async def drive_source(platform: Platform, drive: Path) -> str:
    state = await platform.kernel.config.dispatch_state()
    root = await asyncio.to_thread(drive.resolve)
    [name] = [s.name for s in state.sources.sources.values() if s.real_root == root]
    return name


async def connect_in_drive(platform: Platform, drive: Path, *, trusted: bool = True) -> None:
    (drive / "notes.txt").write_text("before\n")
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    source = await drive_source(platform, drive)
    fields = {"source": source, "trusted": "true" if trusted else "false"}
    item = {"kind": "mcp", "name": "files", "command": FILES_SERVER, "fields": fields}
    added = await platform.call_tool("connect", {"add": [item]})
    assert not added.is_error, added.text


async def test_a_writing_mcp_tool_on_a_source_keeps_a_checkpoint_a_rewind_undoes(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    await connect_in_drive(platform, drive)
    model = Script(platform, "script:mcp")
    model.call("m1", "files_peek", name="notes.txt")
    model.call("m2", "files_write_here", name="notes.txt", text="after\n")
    model.call("m3", "files_scribble", name="quiet.txt", text="unseen\n")
    model.say("Written.")
    turn = await platform.chat("write it", model=model.name, profile="auto")
    assert turn.status == "finished" and turn.text == "Written.", turn
    assert (drive / "notes.txt").read_text() == "after\n"
    steps = await platform.checkpoints(turn.conversation_id)
    assert [(s.step, s.call_id) for s in steps] == [(1, "m2")], steps
    rows = await platform.rows(turn.conversation_id)
    [result] = [r for r in rows if r.call_id == "m2" and r.kind == "tool_result"]
    kept = (result.data or {})["result"]["data"]["checkpoint"]
    assert (kept["id"], kept["files_changed"]) == ("m2", 1), kept

    done = await platform.rewind(turn.conversation_id, "m2")
    assert not done.refused, done.conflicts
    assert (drive / "notes.txt").read_text() == "before\n"
    assert (drive / "quiet.txt").read_text() == "unseen\n"  # believed read-only: not kept


async def test_no_checkpoint_when_the_setting_is_off(platform: Platform, drive: Path) -> None:
    await platform.admin.set_live("checkpoints", False)
    await connect_in_drive(platform, drive)
    result = await platform.call_tool("files_write_here", {"name": "notes.txt", "text": "x\n"})
    assert not result.is_error, result.text
    assert result.data is not None and "checkpoint" not in result.data
    assert (drive / "notes.txt").read_text() == "x\n"


async def test_an_untrusted_servers_read_only_claim_still_keeps_a_checkpoint(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    await connect_in_drive(platform, drive, trusted=False)
    result = await platform.call_tool("files_scribble", {"name": "notes.txt", "text": "y\n"})
    assert not result.is_error, result.text
    assert result.data is not None and result.data["checkpoint"]["files_changed"] == 1


async def test_only_an_admin_runs_a_server_and_only_in_a_named_local_source(
    platform: Platform, drive: Path
) -> None:
    item = {"kind": "mcp", "name": "files", "command": FILES_SERVER}
    source = await drive_source(platform, drive)
    for fields, said in (
        ({"source": "nowhere"}, "must name a local source"),
        ({"source": source, "x": "1"}, "fields accepts"),
    ):
        refused = await platform.call_tool("connect", {"add": [{**item, "fields": fields}]})
        assert refused.is_error and said in refused.text, refused.text
    await platform.identity.create_role("connector", ["mcp.connect"])
    await platform.identity.create_user("max", "connector")
    member = await platform.call_tool(
        "connect", {"add": [{**item, "fields": {"source": source}}]}, user="max"
    )
    assert member.error_code == "feature_missing", member.text
    assert "running a server in a source needs feature" in member.text
