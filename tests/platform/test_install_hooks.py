"""Packages install their own services through the same hook the built-in package uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import corral
from corral import ToolResult
from corral.web.access import WebAccess

FIXTURES = Path(__file__).parent / "fixtures"
GREETER = FIXTURES / "greeter"


def script(tmp_path: Path, *turns: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


async def test_a_folder_package_provides_a_service_its_handler_uses(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORRAL_PACKAGE_PATH", str(GREETER))
    async with corral.open(data_dir) as platform:
        first = await platform.call_tool("greet", {"name": "Ana"})
        second = await platform.call_tool("greet", {"name": "Ben"})
        assert not first.is_error, first.text
        # The same service instance answered both calls: it counts per user.
        assert first.text == "Hello, Ana! (greeting 1 for u_owner)"
        assert second.text == "Hello, Ben! (greeting 2 for u_owner)"
        log = (data_dir / "greeter.log").read_text().splitlines()
        assert log == ["installed as greeter", "started"]
    assert (data_dir / "greeter.log").read_text().splitlines()[-1] == "closed"


async def test_a_tool_waits_on_a_kind_its_package_defines_and_the_run_resumes(
    data_dir: Path, tmp_path: Path
) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "hold", "args": {"token": "hs_1"}}]},
        {"when_result_contains": "shook hands", "text": "Handshake done."},
    )
    async with corral.open(data_dir, package_paths=[GREETER]) as platform:
        turn = await platform.chat("hold on", model=model)
        assert turn.status == "parked"
        (wait,) = turn.waiting
        assert (wait.kind, wait.id, wait.tool) == ("handshake", "hs_1", "hold")
        resumed = await platform.runtime.resolve_wait(
            turn.run_id, wait.call_id, ToolResult.text_result("shook hands")
        )
        assert resumed
        final = await platform.runtime.wait_run(turn.run_id)
        assert final.status == "finished"
        assert (await platform.runtime.result(turn.run_id)).text == "Handshake done."


async def test_a_pending_result_without_a_typed_wait_does_not_park(
    data_dir: Path, tmp_path: Path
) -> None:
    """Data keys are not signals: only ``ToolResult.waiting`` parks a run."""
    model = script(
        tmp_path, {"tool_calls": [{"name": "hold_untyped", "args": {"token": "t"}}]}, {"text": "ok"}
    )
    async with corral.open(data_dir, package_paths=[GREETER]) as platform:
        turn = await platform.chat("hold on", model=model)
        assert turn.status == "finished" and turn.waiting == ()
        assert turn.text == "ok"


async def test_a_service_provided_twice_leaves_the_later_package_out(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[FIXTURES / "clashing", GREETER]) as platform:
        assert "clash" not in platform.registry.tools
        assert "greet" in platform.registry.tools  # the other packages still load
        (error,) = platform.registry.packages["clashing"].errors
        assert "install hook failed" in error.message and "already provided: web" in error.message
        assert isinstance(platform.services.web, WebAccess)
        result = await platform.call_tool("clash", {})
        assert result.error_code == "not_visible"


async def test_a_hook_returning_the_wrong_thing_is_named(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[FIXTURES / "failing"]) as platform:
        assert "fail_tool" not in platform.registry.tools
        (error,) = platform.registry.packages["failing"].errors
        assert "install hook returned dict, not Installed" in error.message
        assert error in platform.registry.errors


async def test_services_given_at_open_win_over_installed_ones(data_dir: Path) -> None:
    mine = WebAccess()
    async with corral.open(data_dir, services=corral.Services(web=mine)) as platform:
        assert platform.services.web is mine
        assert platform.services.shells is not None  # the rest stay as installed
