"""Fixtures of the runtime tests: a platform with the demo and rtkit packages, scripts."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

import corral
from corral.platform import Platform
from corral.runtime.runtime import Runtime
from tests.conftest import DEMO

RTKIT = Path(__file__).parent / "fixtures" / "rtkit"

ScriptWriter = Callable[..., str]


@pytest.fixture
def write_script(tmp_path: Path) -> ScriptWriter:
    """Write a model script and return its model string ``script:PATH``."""
    counter = iter(range(1_000_000))

    def write(*turns: Any, name: str | None = None, **options: Any) -> str:
        path = tmp_path / f"{name or 'script'}-{next(counter)}.json"
        path.write_text(json.dumps({"turns": list(turns), **options}))
        return f"script:{path}"

    return write


@pytest.fixture
async def rt_platform(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, package_paths=[DEMO, RTKIT]) as opened:
        yield opened


@pytest.fixture
def rt(rt_platform: Platform) -> Runtime:
    return rt_platform.runtime


def gate(platform: Platform, name: str) -> asyncio.Event:
    """The event a ``gate`` call with this name waits for."""
    return steering(platform).gate(name)


def steering(platform: Platform) -> Any:
    """The rtkit package's steering service (its class lives in the loaded package)."""
    module = importlib.import_module("corral_packages.rtkit.steering")
    return platform.services.require(module.Steering)


def call(tool: str, /, **args: Any) -> dict[str, Any]:
    """A tool call in a model script."""
    return {"name": tool, "args": args}


def kinds(rows: Any) -> list[str]:
    return [r.kind for r in rows]
