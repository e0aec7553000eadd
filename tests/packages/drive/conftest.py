"""Fixtures of the drive tests: the project drive, a member user, calls and scripted models."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

import corral
from corral.platform import Platform
from corral.runtime.models import parse_script, script_model
from corral.tools.results import ToolResult
from tests.conftest import DEMO


@pytest.fixture
async def platform(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, package_paths=[DEMO]) as opened:
        yield opened


@pytest.fixture
def drive(platform: Platform, data_dir: Path) -> Path:
    return data_dir / "drive"


@pytest.fixture
async def member(platform: Platform) -> str:
    """A member ('mia') with read and write rights on the project drive."""
    await platform.identity.create_user("mia", "member")
    await platform.admin.grant_source(
        "data", principal_kind="role", principal="member", rights="rw"
    )
    return "mia"


async def call(
    platform: Platform, tool: str, /, user: str | None = None, **args: Any
) -> ToolResult:
    return await platform.call_tool(tool, args, user=user)


def tool_call(tool: str, /, **args: Any) -> dict[str, Any]:
    """A tool call in a model script."""
    return {"name": tool, "args": args}


def recording_model(
    platform: Platform, name: str, turns: list[Any], *, images: bool = False
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
    platform.runtime.models.register(name, FunctionModel(record, profile=profile))
    return seen


def returned(messages: list[ModelMessage], tool: str) -> Any:
    """The content of the last return of ``tool`` in a prompt."""
    found = None
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name == tool:
                    found = part.content
    if found is None:
        raise AssertionError(f"no return of {tool!r} in the prompt")
    return found


def user_content(messages: list[ModelMessage]) -> Any:
    """The content of the last user prompt part."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    return part.content
    raise AssertionError("no user prompt in the messages")
