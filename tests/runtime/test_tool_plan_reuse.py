"""tool_search's plan is asked for at every step: it is reused while everything it is made
from is as it was, and made again as soon as any of it changes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from corral.runtime.prompt.system import PromptView
from corral.runtime.timeline import TimelineRow
from corral.runtime.tool_search import service
from corral.runtime.tool_search.service import ToolSearch
from corral.tools.registry import LoadedTool, Package, Registry
from tests.runtime.test_tool_search import SPECS, loaded, spec


def view(live: dict[str, Any], rows: list[TimelineRow] | None = None) -> PromptView:
    run = SimpleNamespace(model="script:/x.json")
    return PromptView(
        conversation_id="c1",
        run=cast(Any, run),
        caller=cast(Any, None),
        agent="default",
        rows=rows or [],
        live=live,
    )


def found_row(seq: int, name: str) -> TimelineRow:
    result = {"data": {"loaded": [name]}}
    return TimelineRow(seq=seq, kind="tool_result", data={"tool": "tool_search", "result": result})


async def test_the_plan_is_reused_until_one_of_its_inputs_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[int] = []
    real = service.plan_tools

    def counted(*args: Any) -> Any:
        made.append(1)
        return real(*args)

    monkeypatch.setattr(service, "plan_tools", counted)
    registry = Registry()
    for name, origin in (("core", "entry_point"), ("mcp", "mcp")):
        registry.packages[name] = Package(name=name, path=Path(name), origin=cast(Any, origin))
    planner = ToolSearch(cast(Any, SimpleNamespace(kernel=SimpleNamespace(registry=registry))))
    search_tool = loaded(spec("tool_search", "Find tools not loaded yet.", query="Q"), "core")
    tools: list[LoadedTool] = [search_tool, *(loaded(s, "mcp") for s in SPECS)]
    live: dict[str, Any] = {"tool_search": "on"}

    deferred: list[str | None] = []

    async def shown(**changes: Any) -> list[str]:
        planned, listing = await planner.plan(
            changes.get("tools", tools),
            view(changes.get("live", live), changes.get("rows")),
            changes.get("pins", ()),
        )
        deferred.append(listing)
        return [t.name for t in planned]

    first = await shown()
    assert first == ["tool_search"] and len(made) == 1
    assert await shown(tools=list(tools)) == first and len(made) == 1  # equal: reused
    # Each input changed alone makes the plan again, and the plan follows it.
    assert await shown(pins=("git_log",)) == ["tool_search", "git_log"]
    assert await shown(live={"tool_search": "off"}) == [s.name for s in SPECS]
    assert await shown(rows=[found_row(1, "git_status")]) == ["tool_search", "git_status"]
    renamed = replace(tools[1], spec=spec("time_now", "Get the current time.", timezone="Zone"))
    await shown(tools=[tools[0], renamed, *tools[2:]])
    assert "\ntime_now\n" in (deferred[-1] or "")
    registry.packages["mcp"].origin = "entry_point"
    assert await shown() == [s.name for s in SPECS]  # nothing left to defer
    assert len(made) == 6
