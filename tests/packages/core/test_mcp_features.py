"""What the client side of MCP supports, against a real stdio server written with the SDK
(tests/fixtures/mcp_features_server.py): structured output, progress, cancellation, a tool
list that changes, roots, logging, resources, prompts, refused sampling and elicitation."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from mcp.types import Tool

from corral.connect.mcp_client import McpConnection
from corral.packages.core.mcp_package import build_package
from corral.packages.core.mcp_servers import McpServers
from corral.platform import Platform
from corral.tools import dispatch
from corral.tools.cancellation import Cancellation
from corral.tools.validation import ArgumentValidator


def add_features(command: list[str]) -> dict[str, object]:
    return {"add": [{"kind": "mcp", "name": "feat", "command": command}], "list": ["mcp"]}


async def connected(platform: Platform, command: list[str]) -> dict[str, object]:
    added = await platform.call_tool("connect", add_features(command))
    assert not added.is_error, added.text
    [row] = (added.data or {})["lists"][0]["rows"]
    assert isinstance(row, dict)
    return row


def connection(platform: Platform) -> McpConnection:
    found = platform.services.require(McpServers).connection("feat")
    assert found is not None
    return found


def file_uri(folder: Path) -> str:
    return Path(os.path.realpath(folder)).as_uri()


def server_log(data_dir: Path) -> str:
    return (data_dir / "private" / "mcp" / "feat" / "stderr.log").read_text()


async def test_the_connection_lists_tools_prompts_and_resources(
    platform: Platform, features_command: list[str]
) -> None:
    row = await connected(platform, features_command)
    assert row["state"] == "connected" and row["leftOut"] == []
    assert "feat_weather" in row["tools"] and "feat_read_resource" in row["tools"]
    assert row["prompts"] == ["greet"]
    assert (row["resources"], row["resourceTemplates"]) == (1, 1)
    read = await platform.call_tool("feat_read_resource", {"uri": "features://readme"})
    assert read.text == "a server for the tests", read.text
    templated = await platform.call_tool("feat_read_resource", {"uri": "features://items/7"})
    assert templated.text == "item 7"
    missing = await platform.call_tool("feat_read_resource", {"uri": "features://nothing"})
    assert missing.is_error and missing.error_code == "mcp_error", missing.text


async def test_structured_output_reaches_the_card(
    platform: Platform, features_command: list[str]
) -> None:
    await connected(platform, features_command)
    [spec] = [t.spec for t in await platform.visible_tools() if t.name == "feat_weather"]
    assert "structured data" in spec.description
    result = await platform.call_tool("feat_weather", {"city": "Oslo"})
    assert not result.is_error, result.text
    assert (result.data or {})["structured"] == {"city": "Oslo", "celsius": 21.5}
    broken = await platform.call_tool("feat_liar", {"city": "Oslo"})
    assert broken.is_error and broken.error_code == "mcp_bad_output", broken.text
    assert "breaks the tool's own output schema" in broken.text


async def test_progress_is_live_output_and_logs_reach_the_connections_log(
    platform: Platform, features_command: list[str], data_dir: Path
) -> None:
    await connected(platform, features_command)
    heard: list[tuple[str, str]] = []
    result = await platform.call_tool(
        "feat_count", {"n": 3}, output=lambda stream, text: heard.append((stream, text))
    )
    assert result.text == "counted to 3", result.text
    assert ("progress", "3/3 step 3\n") in heard, heard
    assert "[info] counting to 3" in server_log(data_dir)


async def test_a_stopped_call_is_cancelled_at_the_server(
    platform: Platform, features_command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not the pipeline's grace running out: the handler cancels the request on Stop itself.
    monkeypatch.setattr(dispatch, "STOP_GRACE_SECONDS", 3600.0)
    await connected(platform, features_command)
    waiting = asyncio.Event()
    stop = Cancellation()
    call = asyncio.create_task(
        platform.call_tool(
            "feat_hang", {}, cancellation=stop, output=lambda stream, text: waiting.set()
        )
    )
    async with asyncio.timeout(30):
        await waiting.wait()
    stop.cancel()
    async with asyncio.timeout(30):
        stopped = await call
    assert stopped.status == "stopped", stopped.text
    told = await platform.call_tool("feat_was_cancelled", {})
    assert told.text == "yes", told.text


async def test_a_changed_tool_list_is_picked_up_without_a_restart(
    platform: Platform, features_command: list[str], data_dir: Path
) -> None:
    await connected(platform, features_command)
    assert "feat_grown" not in {t.name for t in await platform.visible_tools()}
    live = connection(platform)
    assert (await platform.call_tool("feat_grow", {})).text == "grew"
    async with asyncio.timeout(30):
        await live.wait_until(lambda: any(tool.name == "grown" for tool in live.tools))
    assert (await platform.call_tool("feat_grown", {})).text == "grown here"
    assert live.connections == 1
    assert "tool list changed" in server_log(data_dir)


async def test_the_server_is_told_the_callers_roots(
    platform: Platform, features_command: list[str], data_dir: Path
) -> None:
    await connected(platform, features_command)
    drive = file_uri(platform.kernel.settings.drive_dir)
    told = await platform.call_tool("feat_roots", {})
    changed, *uris = told.text.splitlines()
    assert changed == "changed 0" and drive in uris, told.text
    assert all(uri.startswith("file:///") for uri in uris)
    folder = data_dir.parent / "notes"
    folder.mkdir(mode=0o755)
    source = {"kind": "source", "name": "notes", "fields": {"root": str(folder)}}
    assert not (await platform.call_tool("connect", {"add": [source]})).is_error
    again = await platform.call_tool("feat_roots", {})
    changed, *uris = again.text.splitlines()
    assert changed == "changed 1" and file_uri(folder) in uris, again.text


async def test_sampling_and_elicitation_outside_a_run_are_refused_at_once(
    platform: Platform, features_command: list[str], data_dir: Path
) -> None:
    await connected(platform, features_command)
    async with asyncio.timeout(30):
        sampled = await platform.call_tool("feat_sample", {})
        asked = await platform.call_tool("feat_ask", {})
    assert sampled.text.startswith("refused:") and "sampling is not allowed" in sampled.text
    # Outside a conversation run there is no person to put the question to.
    assert asked.text.startswith("refused:") and "no person can be asked" in asked.text
    assert "refused the server's sampling request" in server_log(data_dir)


def test_a_schema_that_cannot_be_used_leaves_only_that_tool_out() -> None:
    tools = [
        Tool(name="fine", input_schema={"type": "object", "properties": {"x": {}}}),
        Tool(
            name="bad_type",
            input_schema={"type": "object", "properties": {"x": {"type": "nonsense"}}},
        ),
        Tool(
            name="draft_seven",
            input_schema={
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"pair": {"type": "array", "items": [{"type": "string"}]}},
            },
        ),
        Tool(
            name="dangling",
            input_schema={"type": "object", "properties": {"x": {"$ref": "#/$defs/gone"}}},
        ),
    ]
    package = build_package("srv", McpConnection("srv", _never_opened), tools, trusted=False)
    assert list(package.tools) == ["srv_fine", "srv_draft_seven"]
    reasons = {error.file: error.message for error in package.errors}
    assert "not a valid JSON Schema" in reasons["mcp:srv/bad_type"]
    assert "cannot be validated against" in reasons["mcp:srv/dangling"]
    draft_seven = ArgumentValidator(package.tools["srv_draft_seven"].spec.input_schema)
    assert draft_seven.errors({"pair": ["a"]}) == [] and draft_seven.errors({"pair": [1]})
    fine = package.tools["srv_fine"].spec
    assert "gives no description" in fine.description and "does not describe x" in fine.description


def _never_opened() -> object:
    raise AssertionError("the package is built without starting the server")
