"""How dispatch runs a handler: async ones awaited in the caller's task, sync ones in a
worker thread unless their tool file says ``"blocking": false``, and Stop still ending both."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral import Cancellation
from corral.platform import Platform
from corral.tools import dispatch
from corral.tools.contract import LoadError, load_tool_file

HANDLERS = """
import asyncio
import threading


def inline_ident(args, ctx):
    return {"thread": threading.get_ident()}


def threaded_ident(args, ctx):
    return {"thread": threading.get_ident()}


async def swallows_cancel(args, ctx):
    ctx.output("stdout", "started")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        return "wound down late"
    return "never"


async def waits(args, ctx):
    ctx.output("stdout", "started")
    await asyncio.Event().wait()
"""


def _tool(name: str, **extra: object) -> dict[str, object]:
    return {
        "name": name,
        "description": f"A test tool named {name} that reports how it was run.",
        "input_schema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
        **extra,
    }


@pytest.fixture
async def modes(tmp_path: Path) -> AsyncIterator[Platform]:
    package = tmp_path / "modes"
    (package / "tools").mkdir(parents=True)
    tools = [
        _tool("inline_ident", blocking=False),
        _tool("threaded_ident"),
        _tool("swallows_cancel"),
        _tool("waits"),
    ]
    for tool in tools:
        (package / "tools" / f"{tool['name']}.json").write_text(json.dumps(tool))
    (package / "handlers.py").write_text(HANDLERS)
    async with corral.open(tmp_path / "data", package_paths=[package]) as platform:
        assert not platform.registry.errors, platform.registry.errors
        yield platform


async def test_non_blocking_sync_handler_runs_on_the_loop_thread(modes: Platform) -> None:
    result = await modes.call_tool("inline_ident", {})
    assert result.data == {"thread": threading.get_ident()}


async def test_sync_handler_runs_in_a_worker_thread_by_default(modes: Platform) -> None:
    result = await modes.call_tool("threaded_ident", {})
    assert result.data is not None and result.data["thread"] != threading.get_ident()


async def test_a_handler_that_swallows_the_cut_leaves_the_caller_uncancelled(
    modes: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dispatch, "STOP_GRACE_SECONDS", 0.0)
    stop = Cancellation()
    started = asyncio.Event()

    async def call() -> tuple[str, str, int]:
        result = await modes.call_tool(
            "swallows_cancel", {}, cancellation=stop, output=lambda _s, _t: started.set()
        )
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # a stray cancel would surface at this await
        return result.status, result.text, task.cancelling()

    running = asyncio.ensure_future(call())
    await asyncio.wait_for(started.wait(), 10)
    stop.cancel()
    status, text, cancelling = await asyncio.wait_for(running, 10)
    assert (status, text, cancelling) == ("stopped", "wound down late", 0)


async def test_cancelling_the_caller_still_cancels_the_call(modes: Platform) -> None:
    started = asyncio.Event()
    running = asyncio.ensure_future(
        modes.call_tool("waits", {}, output=lambda _s, _t: started.set())
    )
    await asyncio.wait_for(started.wait(), 10)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


def test_blocking_must_be_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(_tool("odd", blocking="no")))
    loaded = load_tool_file(path)
    assert isinstance(loaded, LoadError) and loaded.pointer == "/blocking"
    assert "'no' is not of type 'boolean'" in loaded.message


def test_blocking_defaults_to_true(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(_tool("plain")))
    loaded = load_tool_file(path)
    assert not isinstance(loaded, LoadError) and loaded.blocking
