"""Resources and prompts a package declares, and a tool's live output, over `corral mcp serve`
in a real process, driven by the SDK's own stdio client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import (
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

import corral
from corral.server.mcp_offers import OfferError, load_offers

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+"
    "M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

OFFERS = {
    "resources": [
        {
            "uri": "notes://welcome",
            "name": "welcome",
            "description": "The welcome note",
            "mime_type": "text/markdown",
            "text": "# Welcome",
        },
        {"uri": "notes://logo", "name": "logo", "mime_type": "image/png", "blob": PNG},
    ],
    "resource_templates": [
        {"uri_template": "notes://day/{date}", "name": "day", "text": "Notes of {date}"}
    ],
    "prompts": [
        {
            "name": "summarise",
            "description": "Summarise a topic",
            "arguments": [
                {"name": "topic", "required": True, "values": ["tests", "testing", "design"]}
            ],
            "messages": [
                {"role": "user", "text": "Summarise {topic}."},
                {"role": "user", "resource": {"uri": "notes://day/{topic}", "text": "on {topic}"}},
                {"role": "assistant", "image": PNG, "mime_type": "image/png"},
            ],
        }
    ],
}

HANDLERS = """
from corral.tools.results import ResourceBlock, TextBlock, ToolResult


def count_down(args, ctx):
    for n in ("three", "two", "one"):
        ctx.output("stdout", n)
    ctx.output("stderr", "lift-off")
    return ToolResult(content=[
        TextBlock("done"),
        ResourceBlock(uri="notes://welcome", media_type="text/markdown"),
        ResourceBlock(uri="notes://elsewhere", media_type="text/plain"),
    ])
"""

TOOL = {
    "name": "count_down",
    "description": "Count down out loud, then point at two notes.",
    "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
    "annotations": {"readOnlyHint": True},
}


def write_package(root: Path) -> Path:
    folder = root / "notes"
    (folder / "tools").mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"name": "notes", "version": "1"}))
    (folder / "tools" / "count_down.json").write_text(json.dumps(TOOL))
    (folder / "handlers.py").write_text(HANDLERS)
    (folder / "mcp_offers.json").write_text(json.dumps(OFFERS))
    folder.chmod(0o755)
    return folder


async def test_a_packages_resources_prompts_and_live_output_reach_an_sdk_client(
    data_dir: Path, tmp_path: Path
) -> None:
    package = write_package(tmp_path)
    async with corral.open(data_dir, package_paths=[package]):
        pass  # migrate and seed before the server process starts
    logged: list[LoggingMessageNotificationParams] = []
    progress: list[tuple[float, str | None]] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "corral", "mcp", "serve"],
        env={
            "CORRAL_DATA_DIR": str(data_dir),
            "CORRAL_PACKAGE_PATH": str(package),
            "PYTHONPATH": os.pathsep.join(sys.path),
        },
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, logging_callback=on_log) as session,
    ):
        await session.initialize()
        listed = (await session.list_resources()).resources
        assert [(r.uri, r.name) for r in listed] == [
            ("notes://welcome", "welcome"),
            ("notes://logo", "logo"),
        ]
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["notes://day/{date}"]
        welcome = (await session.read_resource("notes://welcome")).contents[0]
        assert isinstance(welcome, TextResourceContents) and welcome.text == "# Welcome"
        logo = (await session.read_resource("notes://logo")).contents[0]
        assert getattr(logo, "blob", None) == PNG and logo.mime_type == "image/png"
        day = (await session.read_resource("notes://day/2026-12-05")).contents[0]
        assert isinstance(day, TextResourceContents) and day.text == "Notes of 2026-12-05"
        with pytest.raises(MCPError, match="no resource notes://nowhere"):
            await session.read_resource("notes://nowhere")
        with pytest.warns(MCPDeprecationWarning):  # the SDK's client prefers listen()
            await session.subscribe_resource("notes://welcome")
            await session.unsubscribe_resource("notes://welcome")

        prompts = (await session.list_prompts()).prompts
        assert [(p.name, [a.name for a in p.arguments or []]) for p in prompts] == [
            ("summarise", ["topic"])
        ]
        got = await session.get_prompt("summarise", {"topic": "tests"})
        first, embedded, image = (m.content for m in got.messages)
        assert isinstance(first, TextContent) and first.text == "Summarise tests."
        assert isinstance(embedded, EmbeddedResource)
        assert embedded.resource.uri == "notes://day/tests"
        assert isinstance(image, ImageContent) and got.messages[2].role == "assistant"
        with pytest.raises(MCPError, match="needs the argument"):
            await session.get_prompt("summarise", {})
        completed = await session.complete(
            PromptReference(name="summarise"), {"name": "topic", "value": "test"}
        )
        assert completed.completion.values == ["tests", "testing"]

        quiet = await session.call_tool("count_down", {}, progress_callback=on_progress)
        assert logged == []  # no level set: no log messages
        assert [m for _, m in progress] == ["three", "two", "one", "lift-off"]
        assert [n for n, _ in progress] == [1.0, 2.0, 3.0, 4.0]
        with pytest.warns(MCPDeprecationWarning):
            await session.set_logging_level("warning")
        called = await session.call_tool("count_down", {})
        assert [(m.level, m.data) for m in logged] == [
            ("warning", {"stream": "stderr", "text": "lift-off"})
        ]
    for result in (quiet, called):
        text, offered, linked = result.content
        assert isinstance(text, TextContent) and text.text == "done"
        assert isinstance(offered, EmbeddedResource)
        assert getattr(offered.resource, "text", None) == "# Welcome"
        assert isinstance(linked, ResourceLink) and str(linked.uri) == "notes://elsewhere"


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("{not json", "not readable JSON"),
        ("[]", "must be a JSON object"),
        (json.dumps({"resources": {}}), "'resources' must be a list"),
        (json.dumps({"resources": [{"uri": "a://b"}]}), "resources[0] needs the string"),
        (json.dumps({"resources": [{"uri": "a://b", "name": "b"}]}), "exactly one of"),
    ],
)
def test_a_broken_offers_file_is_refused_saying_what_to_fix(
    tmp_path: Path, written: str, says: str
) -> None:
    (tmp_path / "mcp_offers.json").write_text(written)
    with pytest.raises(OfferError, match=says.replace("[", r"\[").replace("]", r"\]")):
        load_offers("p", tmp_path)


def test_a_package_without_an_offers_file_offers_nothing(tmp_path: Path) -> None:
    offers: Any = load_offers("p", tmp_path)
    assert offers.listed_resources() == [] and offers.listed_prompts() == []
