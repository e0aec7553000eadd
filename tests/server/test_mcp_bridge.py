"""`corral mcp serve` in a real process, driven by the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import ElicitRequestParams, ElicitResult, TextContent

import corral
from corral.server.mcp_bridge import NOT_OVER_MCP
from tests.conftest import DEMO


def text_of(content: list[object]) -> str:
    return "".join(block.text for block in content if isinstance(block, TextContent))


async def _balanced_server(data_dir: Path) -> StdioServerParameters:
    """`corral mcp serve --profile balanced` on ``data_dir``, migrated and seeded first."""
    async with corral.open(data_dir, package_paths=[DEMO]):
        pass  # migrate and seed before the server process starts
    env = {
        "CORRAL_DATA_DIR": str(data_dir),
        "CORRAL_PACKAGE_PATH": str(DEMO),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "corral", "mcp", "serve", "--profile", "balanced"],
        env=env,
    )


async def test_a_whole_sdk_session_over_stdio_keeps_todos_and_waits_for_a_cli_approval(
    data_dir: Path,
) -> None:
    params = await _balanced_server(data_dir)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"todos", "execute", "echo", "write_note"} <= set(listed)
        assert listed["todos"].input_schema["type"] == "object"
        echo_hints = listed["echo"].annotations
        assert echo_hints is not None and echo_hints.read_only_hint is True

        echoed = await session.call_tool("echo", {"text": "hi"})
        assert not echoed.is_error and text_of(echoed.content) == "hi"

        todos = await session.call_tool("todos", {"plan": {"steps": ["write the tests"]}})
        assert not todos.is_error, text_of(todos.content)
        marked = await session.call_tool(
            "todos", {"mark": {"steps": [{"id": 1, "status": "done"}]}}
        )
        # The process's session is one conversation: the mark finds the planned step.
        assert "completed: 'todo list (1 steps)'" in text_of(marked.content)
        assert not NOT_OVER_MCP & set(listed)
        bad_todos = await session.call_tool("todos", {"plan": {"todos": []}})
        assert bad_todos.is_error and "unknown property 'todos'" in text_of(bad_todos.content)

        bad = await session.call_tool("echo", {"text": 1})
        assert bad.is_error and bad.structured_content == {
            "status": "error",
            "code": "invalid_arguments",
        }
        assert "invalid arguments for 'echo'" in text_of(bad.content)

        pending = await session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert not pending.is_error
        assert pending.structured_content is not None
        assert pending.structured_content["status"] == "pending"
        approval = pending.structured_content["approvalId"]
        assert approval.startswith("ap_") and approval in text_of(pending.content)
        # A person decides it with the CLI while the MCP session stays open.
        decider = await asyncio.create_subprocess_exec(
            sys.executable,
            *["-m", "corral", "approvals", "decide", approval, "approve"],
            env=params.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await decider.communicate()
        assert decider.returncode == 0, err.decode()
        assert "wrote data://n.md" in out.decode()
        again = await session.call_tool("echo", {"text": "still here"})
        assert text_of(again.content) == "still here"
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        assert await platform.pending_approvals() == []
        conversations = await platform.runtime.list_conversations()
        assert [c.title for c in conversations] == ["MCP session"]


def test_the_end_of_a_stdio_session_runs_the_session_end_hooks(data_dir: Path) -> None:
    heard = Path(tempfile.mkdtemp(prefix="corral-session-end-"))
    heard.chmod(0o777)  # the hook runs as the sandbox uid
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        hook = {"type": "command", "command": f"cat > {heard}/ended.json"}
        hooks = {"SessionEnd": [{"hooks": [hook]}]}
        (data_dir / "hooks.json").write_text(json.dumps(hooks), encoding="utf-8")
        server = subprocess.run(
            [sys.executable, "-m", "corral", "mcp", "serve"],
            input="",  # the client closes the stream at once: the session ends
            capture_output=True,
            text=True,
            env={**os.environ, "CORRAL_DATA_DIR": str(data_dir), "CORRAL_PACKAGE_PATH": str(DEMO)},
            timeout=120,
        )
        assert server.returncode == 0, server.stderr
        ended = json.loads((heard / "ended.json").read_text(encoding="utf-8"))
        assert ended["hook_event_name"] == "SessionEnd" and ended["reason"] == "other"
        assert ended["session_id"].startswith("mcp-")
    finally:
        shutil.rmtree(heard)


async def test_over_stdio_a_client_that_elicits_approves_and_the_call_finishes_in_place(
    data_dir: Path,
) -> None:
    params = await _balanced_server(data_dir)
    asked: list[str] = []

    async def approve(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"decision": "approve"})

    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=approve) as session,
    ):
        await session.initialize()
        wrote = await session.call_tool("write_note", {"path": "data://n.md", "text": "x"})
        assert not wrote.is_error and "wrote data://n.md" in text_of(wrote.content)
        assert len(asked) == 1 and "'write_note'" in asked[0]
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        (approval,) = await platform.approvals.list(status=None)
        assert (approval.status, approval.decided_by) == ("approved", "u_owner")
        assert approval.note == "approved in the MCP client"
