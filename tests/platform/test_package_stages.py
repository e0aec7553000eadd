"""Packages add dispatch pipeline stages through their install hook, at declared positions."""

from __future__ import annotations

from pathlib import Path

import corral
from corral.tools.stages import BUILT_IN

FIXTURES = Path(__file__).parent / "fixtures"
STAGED = FIXTURES / "staged"
GREETER = FIXTURES / "greeter"


def logged(data_dir: Path) -> list[str]:
    log = data_dir / "stages.log"
    return log.read_text().splitlines() if log.exists() else []


async def test_contributed_stages_take_their_declared_places(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[STAGED]) as platform:
        names = [stage.name for stage in platform.dispatcher.stages]
        assert names == [
            "staged_gatekeeper",
            "slow_calls",
            "shaping",
            "visibility",
            "hooks",
            "validation",
            "grants",
            "context",
            "staged_refuser",
            "policy",
            "rules",
            "approval",
            "budget",
            "staged_observer",
            "staged_shouter",
            "handler",
        ]
        assert [s.name for s in platform.dispatcher.built_in] == list(BUILT_IN)


async def test_an_observing_stage_sees_every_call_that_runs(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[STAGED, GREETER]) as platform:
        echoed = await platform.call_tool("staged_echo", {"text": "hi"})
        greeted = await platform.call_tool("greet", {"name": "Ana"})
        assert echoed.text == "hi" and not greeted.is_error
        assert logged(data_dir) == [
            "staged_echo ok {'text': 'hi'}",
            "greet ok {'name': 'Ana'}",
        ]
        # Placed after approval: a parked call is not seen until a person approves it.
        parked = await platform.call_tool("staged_echo", {"text": "later"}, profile="safe")
        assert parked.error_code == "approval_pending" and parked.waiting is not None
        assert len(logged(data_dir)) == 2
        await platform.decide_approval(parked.waiting.id, "approve")
        approved = await platform.approval_result(parked.waiting.id)
        assert approved is not None and approved.text == "later"
        assert logged(data_dir)[-1] == "staged_echo ok {'text': 'later'}"


async def test_a_refusing_stage_stops_the_call_with_a_readable_error(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[STAGED]) as platform:
        refused = await platform.call_tool("staged_echo", {"text": "refuse me"})
        assert refused.is_error and refused.error_code == "policy_denied"
        assert "refuses the text 'refuse me'; send another text" in refused.text
        assert logged(data_dir) == []  # nothing after the refusing stage ran
        # Before policy, so before approval: nothing is parked for a refused call either.
        again = await platform.call_tool("staged_echo", {"text": "refuse me"}, profile="safe")
        assert again.error_code == "policy_denied"
        assert await platform.pending_approvals() == []


async def test_a_refusal_outside_every_stage_is_still_an_error_result(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[STAGED]) as platform:
        refused = await platform.call_tool("staged_echo", {"text": "refuse outside"})
        assert refused.error_code == "policy_denied"
        assert "the gatekeeper refuses 'refuse outside'" in refused.text
        assert logged(data_dir) == []


async def test_a_stage_rewrites_the_arguments_for_the_stages_after_it(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[STAGED]) as platform:
        result = await platform.call_tool("staged_echo", {"text": "shout:hey"})
        assert result.text == "HEY"
        # The observer sits before the shouter: it saw the arguments as they reached it.
        assert logged(data_dir) == ["staged_echo ok {'text': 'shout:hey'}"]


async def test_a_stage_at_an_unknown_position_leaves_its_package_out(data_dir: Path) -> None:
    async with corral.open(data_dir, package_paths=[FIXTURES / "misplaced", STAGED]) as platform:
        assert "misplaced_tool" not in platform.registry.tools
        assert "staged_echo" in platform.registry.tools  # the other packages still load
        (error,) = platform.registry.packages["misplaced"].errors
        assert error in platform.registry.errors
        assert "a pipeline stage of it cannot be placed" in error.message
        assert "stage 'late' is placed after 'approvals', which is no built-in stage" in (
            error.message
        )
        assert "use one of slow_calls, shaping, visibility" in error.message
        assert "late" not in [stage.name for stage in platform.dispatcher.stages]
        result = await platform.call_tool("misplaced_tool", {})
        assert result.error_code == "not_visible"
