"""lazy_handler: the tool's module is imported with its first call, not at discovery, and a
module whose function is not async is refused with a clear error."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from corral.tools.context import CallContext
from corral.tools.lazy_handler import lazy_handler

TOOL = """
CALLS = []


async def greet(args, ctx):
    CALLS.append(args)
    return {"hello": args["name"]}


def blocking(args, ctx):
    return "sync"
"""

CTX = cast(CallContext, object())


@pytest.fixture
def tool_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"lazy_tool_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(TOOL)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


async def test_the_module_loads_with_the_first_call(tool_module: str) -> None:
    handler = lazy_handler(tool_module, "greet")
    assert tool_module not in sys.modules
    assert handler.__name__ == "greet"
    assert inspect.iscoroutinefunction(handler)
    assert await handler({"name": "ada"}, CTX) == {"hello": "ada"}
    assert tool_module in sys.modules
    assert await handler({"name": "bob"}, CTX) == {"hello": "bob"}
    calls: list[Any] = sys.modules[tool_module].CALLS
    assert calls == [{"name": "ada"}, {"name": "bob"}]


async def test_a_sync_function_is_refused_by_name(tool_module: str) -> None:
    handler = lazy_handler(tool_module, "blocking")
    with pytest.raises(TypeError, match=rf"{tool_module}\.blocking must be an async function"):
        await handler({}, CTX)
