"""execute judges a command once per pass of the pipeline: its policy hook keeps what it
checked on the call's findings and the handler runs on that. An approved call passes the
pipeline again when a person approves it, so it is judged once more, then."""

from __future__ import annotations

from pathlib import Path

import corral
from corral.platform import Platform
from corral.shell.service import ShellService

STAGED = Path(__file__).parents[2] / "platform" / "fixtures" / "staged"


def judged(platform: Platform) -> int:
    return platform.services.require(ShellService).judged


async def test_a_plain_call_is_judged_once(platform: Platform) -> None:
    before = judged(platform)
    result = await platform.call_tool("execute", {"command": "echo judged-once"})
    assert not result.is_error, result.text
    assert "judged-once" in result.text
    assert judged(platform) - before == 1


async def test_a_background_call_is_judged_once(platform: Platform) -> None:
    before = judged(platform)
    result = await platform.call_tool("execute", {"command": "true", "background": True})
    assert not result.is_error, result.text
    assert judged(platform) - before == 1


async def test_an_approved_call_is_judged_again_once(platform: Platform) -> None:
    before = judged(platform)
    parked = await platform.call_tool("execute", {"command": "echo approved-run"}, profile="safe")
    assert parked.waiting is not None, parked.text
    assert judged(platform) - before == 1
    await platform.decide_approval(parked.waiting.id, "approve")
    result = await platform.approval_result(parked.waiting.id)
    assert result is not None and not result.is_error, result
    assert "approved-run" in result.text
    assert judged(platform) - before == 2


async def test_a_refused_command_is_judged_once_and_never_parked(platform: Platform) -> None:
    before = judged(platform)
    refused = await platform.call_tool("execute", {"command": "sudo id"}, profile="safe")
    assert refused.error_code == "policy_denied", refused.text
    assert judged(platform) - before == 1
    assert await platform.pending_approvals() == []


async def test_a_command_rewritten_after_the_policy_step_is_judged_again(data_dir: Path) -> None:
    """A stage between policy and handler that changes the command cannot slip past the
    guards: the handler judges the command it was given."""
    async with corral.open(data_dir, package_paths=[STAGED]) as platform:
        before = judged(platform)
        result = await platform.call_tool("execute", {"command": "echo before-rewrite"})
        assert not result.is_error, result.text
        assert "after-rewrite" in result.text
        assert judged(platform) - before == 2
