"""Multimodal results: real media for a model that reads it, markers otherwise, references
re-read under the user's access when the prompt is rebuilt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.messages import BinaryContent, ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

from corral.platform import Platform
from corral.runtime.models import parse_script, script_model
from corral.runtime.runtime import Runtime
from tests.fixtures.packages.demo.handlers import PNG
from tests.runtime.conftest import call


def recording_model(
    rt: Runtime, name: str, turns: list[Any], *, images: bool
) -> list[list[ModelMessage]]:
    """Register a scripted model that keeps every prompt it receives."""
    inner = script_model(parse_script({"turns": turns}), name)
    assert inner.function is not None
    respond = inner.function
    seen: list[list[ModelMessage]] = []

    def record(messages: list[ModelMessage], info: AgentInfo) -> Any:
        seen.append(list(messages))
        return respond(messages, info)

    profile = ModelProfile(supports_image_input=images, supports_audio_file_input=False)
    rt.models.register(name, FunctionModel(record, profile=profile))
    return seen


def returned(messages: list[ModelMessage], tool: str) -> Any:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name == tool:
                    return part.content
    raise AssertionError(f"no return of {tool!r} in the prompt")


async def test_an_image_reaches_a_model_that_reads_images_as_an_image(
    rt_platform: Platform, rt: Runtime
) -> None:
    seen = recording_model(
        rt, "test:eyes", [{"tool_calls": [call("picture")]}, {"text": "a dot"}], images=True
    )
    turn = await rt_platform.chat("look", model="test:eyes")
    assert turn.status == "finished"
    content = returned(seen[-1], "picture")
    assert content[0] == "a dot"
    assert isinstance(content[1], BinaryContent)
    assert content[1].data == PNG and content[1].media_type == "image/png"
    stored = next(r for r in turn.rows if r.kind == "tool_result").data["result"]
    assert stored["content"][1]["type"] == "image"  # server-rendered media is kept inline


async def test_a_model_without_image_input_gets_a_marker(
    rt_platform: Platform, rt: Runtime
) -> None:
    seen = recording_model(
        rt, "test:blind", [{"tool_calls": [call("picture")]}, {"text": "ok"}], images=False
    )
    await rt_platform.chat("look", model="test:blind")
    content = returned(seen[-1], "picture")
    assert content[0] == "a dot"
    assert (
        content[1] == f"[image image/png, {len(PNG)} bytes: this model does not take image input]"
    )


async def test_media_from_a_file_is_stored_by_reference_and_re_read(
    rt_platform: Platform, rt: Runtime, data_dir: Path
) -> None:
    (data_dir / "drive" / "dot.png").write_bytes(PNG)
    seen = recording_model(
        rt,
        "test:files",
        [
            {"tool_calls": [call("show_file", uri="data://dot.png", media_type="image/png")]},
            {"text": "I see it."},
            {"text": "Still here?"},
            {"text": "Anything now?"},
        ],
        images=True,
    )
    turn = await rt_platform.chat("show me the dot", model="test:files")
    stored = next(r for r in turn.rows if r.kind == "tool_result").data["result"]
    assert stored["content"][1] == {
        "type": "resource",
        "uri": "data://dot.png",
        "media_type": "image/png",
        "title": None,
    }
    live = returned(seen[-1], "show_file")
    assert isinstance(live[1], BinaryContent) and live[1].data == PNG

    # A later prompt re-reads the file: a changed file shows its new bytes.
    (data_dir / "drive" / "dot.png").write_bytes(PNG + b"\x00")
    await rt_platform.chat("again", conversation_id=turn.conversation_id)
    assert returned(seen[-1], "show_file")[1].data == PNG + b"\x00"

    # A deleted file degrades to a short marker; the conversation goes on.
    (data_dir / "drive" / "dot.png").unlink()
    later = await rt_platform.chat("and now", conversation_id=turn.conversation_id)
    assert later.status == "finished"
    marker = returned(seen[-1], "show_file")[1]
    assert marker.startswith("[image data://dot.png is no longer available")


async def test_media_is_re_read_under_the_users_current_access(
    rt_platform: Platform, rt: Runtime, data_dir: Path
) -> None:
    await rt_platform.identity.create_role("viewer", ["core.web"])
    await rt_platform.identity.create_user("vic", "viewer")
    await rt_platform.admin.grant_source(
        "data", principal_kind="role", principal="viewer", rights="r"
    )
    (data_dir / "drive" / "dot.png").write_bytes(PNG)
    seen = recording_model(
        rt,
        "test:access",
        [
            {"tool_calls": [call("show_file", uri="data://dot.png", media_type="image/png")]},
            {"text": "seen"},
            {"text": "again"},
        ],
        images=True,
    )
    turn = await rt_platform.chat("show", model="test:access", user="vic")
    assert isinstance(returned(seen[-1], "show_file")[1], BinaryContent)
    await rt_platform.admin.grant_source(
        "data", principal_kind="role", principal="viewer", rights=""
    )
    await rt_platform.chat("again", conversation_id=turn.conversation_id, user="vic")
    assert returned(seen[-1], "show_file")[1] == (
        "[image data://dot.png is no longer available: you may no longer read it]"
    )
