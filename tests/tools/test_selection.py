"""Tool selection: every narrowing layer can only take tools away."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from corral import Narrowing
from corral.platform import Platform
from corral.tools.registry import LoadedTool
from corral.tools.selection import Visibility


async def names(platform: Platform, **kwargs: object) -> set[str]:
    return {t.name for t in await platform.visible_tools(**kwargs)}  # type: ignore[arg-type]


async def test_all_mode_shows_every_loaded_tool(platform: Platform) -> None:
    assert {"echo", "write_note", "wait", "picture"} <= await names(platform)


async def test_switching_one_tool_off_keeps_all_mode(platform: Platform) -> None:
    await platform.admin.set_tool_enabled("default", "echo", False)
    visible = await names(platform)
    assert "echo" not in visible and "wait" in visible
    result = await platform.call_tool("echo", {"text": "hi"})
    assert result.error_code == "not_visible"
    assert "switched off for agent 'default'" in result.text


async def test_allowlist_cannot_widen_past_a_disabled_package(platform: Platform) -> None:
    await platform.admin.set_custom_tools("default", ["echo", "wait"])
    await platform.admin.set_package_enabled("demo", False)
    assert await names(platform) == set()
    result = await platform.call_tool("echo", {"text": "hi"})
    assert result.error_code == "not_visible"
    assert "package 'demo' is disabled" in result.text
    await platform.admin.set_package_enabled("demo", True)
    assert await names(platform) == {"echo", "wait"}


async def test_custom_allowlist_is_frozen(platform: Platform) -> None:
    await platform.admin.set_custom_tools("default", ["echo"])
    assert await names(platform) == {"echo"}
    result = await platform.call_tool("wait", {"ms": 1})
    assert "custom tool list without it" in result.text


async def test_grants_narrow_and_allowlist_cannot_restore(platform: Platform) -> None:
    await platform.identity.create_role("reader", ["core.web"])
    await platform.identity.create_user("rita", "reader")
    await platform.admin.set_custom_tools("default", ["write_note", "echo"])
    assert await names(platform, user="rita") == {"echo"}
    result = await platform.call_tool(
        "write_note", {"path": "data://x.md", "text": "x"}, user="rita"
    )
    assert result.error_code == "feature_missing"
    assert "'core.exec'" in result.text


async def test_run_narrowing_only_intersects(platform: Platform) -> None:
    await platform.admin.set_tool_enabled("default", "wait", False)
    narrowing = Narrowing(tools=frozenset({"echo", "wait"}), blocked_tools=frozenset({"echo"}))
    assert await names(platform, narrowing=narrowing) == set()
    child = Narrowing(tools=frozenset({"picture", "echo"})).within(
        Narrowing(tools=frozenset({"echo"}))
    )
    assert child.tools == frozenset({"echo"})


async def test_subagents_never_see_person_facing_tools(platform: Platform) -> None:
    subagent = Narrowing(subagent=True)
    visible = await names(platform, narrowing=subagent)
    assert "echo" in visible and "confirm" not in visible
    assert "confirm" in await names(platform)
    forged = await platform.call_tool("confirm", {}, narrowing=subagent)
    assert forged.error_code == "not_visible" and "never reaches a subagent" in forged.text
    core = platform.registry.packages["core"]
    ask = (
        core.tools["ask_question"].spec
        if "ask_question" in core.tools
        else core.pending["ask_question"]
    )
    assert ask.subagents is False


async def test_hallucinated_tool_is_refused_and_nothing_runs(platform: Platform) -> None:
    result = await platform.call_tool("rm_everything", {"path": "/"})
    assert result.is_error and result.error_code == "not_visible"
    assert "no tool named 'rm_everything'" in result.text


async def test_asking_again_unchanged_reuses_the_last_answer(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run asks at every step; the same layers over the same loaded tools filter once.
    filtered: list[object] = []
    real = Visibility.visible

    def counted(self: Visibility, tools: Iterable[LoadedTool]) -> list[LoadedTool]:
        filtered.append(self)
        return real(self, tools)

    monkeypatch.setattr(Visibility, "visible", counted)
    first = await names(platform)
    again = await names(platform, narrowing=Narrowing())  # an equal narrowing, a new object
    assert first == again and len(filtered) == 1
    blocked = Narrowing(blocked_tools=frozenset({"echo"}))
    assert "echo" not in await names(platform, narrowing=blocked)
    assert len(filtered) == 2


async def test_a_package_dropped_or_added_between_two_asks_shows_at_once(
    platform: Platform,
) -> None:
    assert "echo" in await names(platform)
    demo = platform.registry.packages["demo"]
    platform.registry.drop("demo")
    assert "echo" not in await names(platform)
    platform.registry.add(demo)
    tools = await platform.visible_tools()
    assert platform.registry.tools["echo"] in tools
