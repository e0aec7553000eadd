"""The four listing commands of issue 39 item 3 (`tools list`, `approvals list`,
`conversations show`, `skills list`), run as real processes on a data folder with real
content: a connected MCP server (the demo fixture), a pending approval of one of its tools, a
conversation with a turn and a skill bundle. Each shows what the platform holds, as the
platform itself reads it; the start-up work made lazy must not change any of it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import corral
from tests.cli.processes import corral_cli, script_model
from tests.packages.core.conftest import MCP_SERVER
from tests.runtime.skills.conftest import write_bundle


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = corral_cli(data_dir, *args, env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    return done


def as_json(data_dir: Path, *args: str) -> Any:
    return json.loads(run(data_dir, *args, "--json").stdout)


@pytest.fixture(scope="module")
def content(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The data folder, filled through the platform, and what the platform reads of it."""
    import asyncio

    root = tmp_path_factory.mktemp("content")
    root.chmod(0o711)  # passable by the sandbox uid the MCP server runs as
    data = root / "data"
    model = script_model(root, "hello", {"text": "hello back"})

    async def fill() -> dict[str, Any]:
        async with corral.open(data) as platform:
            added = await platform.call_tool(
                "connect",
                {"add": [{"kind": "mcp", "name": "demo", "command": MCP_SERVER}]},
            )
            assert not added.is_error, added.text
            parked = await platform.call_tool("demo_add", {"a": 1, "b": 2}, profile="balanced")
            assert parked.error_code == "approval_pending", parked.text
            turn = await platform.chat("hi there", model=model)
            assert "hello back" in turn.text
            rt = platform.runtime
            rows = await rt.conversations.rows(turn.conversation_id, after=0)
            return {
                "visible": sorted(t.name for t in await platform.visible_tools()),
                "tools": sorted(platform.registry.tools),
                "approvals": [a.to_json() for a in await platform.pending_approvals()],
                "conversation": turn.conversation_id,
                "rows": [r.to_json() for r in rows],
            }

    held = asyncio.run(fill())
    write_bundle(data / "drive" / "skills", "wiki-notes")
    return {"data": data, **held}


def test_tools_list_shows_the_mcp_servers_tools(content: dict[str, Any]) -> None:
    listing = as_json(content["data"], "tools", "list")
    assert sorted(t["name"] for t in listing["tools"]) == content["tools"]
    assert sorted(t["name"] for t in listing["tools"] if t["visible"]) == content["visible"]
    demo = {t["name"]: t for t in listing["tools"] if t["package"] == "mcp:demo"}
    assert set(demo) == {"demo_add", "demo_crash", "demo_env", "demo_note", "demo_vague"}
    assert demo["demo_add"]["visible"]
    assert listing["tools"][0]["package"] == "core" and listing["errors"] == []
    execute = next(t for t in listing["tools"] if t["name"] == "execute")
    assert execute["visible"]  # its sandbox was probed as the platform opened
    table = run(content["data"], "tools", "list").stdout
    assert "│ demo_add " in table and "│ mcp:demo │ yes" in table


def test_approvals_list_shows_the_pending_approval(content: dict[str, Any]) -> None:
    [approval] = content["approvals"]
    listed = as_json(content["data"], "approvals", "list")
    assert [{k: v for k, v in a.items() if k != "remember"} for a in listed] == [approval]
    assert approval["tool"] == "demo_add" and approval["status"] == "pending"
    table = run(content["data"], "approvals", "list").stdout
    assert f"│ {approval['id']} │ demo_add " in table


def test_conversations_show_shows_the_turn(content: dict[str, Any]) -> None:
    shown = as_json(content["data"], "conversations", "show", content["conversation"])
    assert shown["conversation"]["id"] == content["conversation"]
    assert shown["rows"] == content["rows"]
    kinds = [r["kind"] for r in shown["rows"]]
    assert "user_message" in kinds
    text = run(content["data"], "conversations", "show", content["conversation"]).stdout
    assert "you: hi there" in text and "hello back" in text


def test_skills_list_shows_the_bundle(content: dict[str, Any]) -> None:
    listed = as_json(content["data"], "skills", "list")
    names = {s["name"]: s for s in listed["skills"]}
    assert names["wiki-notes"]["origin"] == "drive"
    assert names["wiki-notes"]["description"] == "Publish notes."
    assert {"execute", "delegate"} <= set(names) and listed["errors"] == []
    table = " ".join(run(content["data"], "skills", "list").stdout.split())
    assert "│ wiki-notes │ drive │ - │ Publish notes. │" in table
