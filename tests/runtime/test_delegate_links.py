"""A delegate's run folder never follows a link out of the drive (issue 28, finding 2).

The plant: in a fresh data folder a sandboxed command points ``.corral`` (or a folder below
it) at a folder outside the data folder, then a delegate makes the platform write its run
folder. Nothing may appear outside, whatever level the link is planted at.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.platform import Platform
from tests.runtime.conftest import ScriptWriter, call
from tests.shell.conftest import needs_bwrap


def _delegating(write_script: ScriptWriter) -> str:
    child = write_script({"text": "Child done."}, name="child")
    return write_script(
        {"tool_calls": [call("delegate", task="Say hi", model=child)]},
        {"text": "Parent done."},
    )


@needs_bwrap
async def test_a_link_planted_by_a_sandboxed_command_takes_no_write_outside(
    rt_platform: Platform, write_script: ScriptWriter, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    # The name is computed, as an attacker would, so the analyser does not see `.corral`.
    command = f"python3 -c \"import os; os.symlink('{outside}', '.cor' + 'ral')\""
    planted = await rt_platform.call_tool("execute", {"command": command, "cwd": "data://"})
    assert planted.error_code in (None, "exited"), planted.text
    turn = await rt_platform.chat("go", model=_delegating(write_script), profile="auto")
    assert (turn.status, turn.text) == ("finished", "Parent done.")
    assert sorted(outside.iterdir()) == []
    private = data_dir / "drive" / ".corral"
    assert private.is_dir() and not private.is_symlink()
    assert list((private / "conversations" / turn.conversation_id / "runs").iterdir())


@pytest.mark.parametrize("level", ["conversations", "<conversation>", "runs"])
async def test_a_link_at_any_level_below_the_private_area_refuses_the_run_folder(
    rt_platform: Platform, write_script: ScriptWriter, data_dir: Path, tmp_path: Path, level: str
) -> None:
    """As if the sandbox's mask had failed: the link is put there directly, mid-conversation."""
    outside = tmp_path / "outside"
    outside.mkdir()
    first = await rt_platform.chat("hello", model=write_script({"text": "Hi."}), profile="auto")
    conversations = data_dir / "drive" / ".corral" / "conversations"
    where = {
        "conversations": conversations,
        "<conversation>": conversations / first.conversation_id,
        "runs": conversations / first.conversation_id / "runs",
    }[level]
    where.parent.mkdir(parents=True, exist_ok=True)
    if where.exists():
        where.rmdir()
    where.symlink_to(outside)
    parent = write_script(
        {"text": "(the first turn)"},
        {"tool_calls": [call("delegate", task="Say hi", model=write_script({"text": "x"}))]},
        {"text": "Parent done."},
    )
    turn = await rt_platform.chat(
        "go", conversation_id=first.conversation_id, model=parent, profile="auto"
    )
    assert sorted(outside.iterdir()) == []
    results = [r.data["result"] for r in turn.rows if r.kind == "tool_result"]
    assert results, [r.kind for r in turn.rows]
    (refused,) = results
    assert refused["status"] == "error", refused
    assert "symbolic link" in refused["content"][0]["text"]
    assert str(where) in refused["content"][0]["text"]
    assert "Traceback" not in json.dumps(refused)
