"""execute judges a command once per pass of the pipeline: its policy hook keeps what it
checked on the call's findings and the handler runs on that. An approved call passes the
pipeline again when a person approves it, so it is judged once more, then."""

from __future__ import annotations

from corral.platform import Platform
from corral.shell.service import ShellService


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
    result = await platform.decide_approval(parked.waiting.id, "approve")
    assert not result.is_error, result.text
    assert "approved-run" in result.text
    assert judged(platform) - before == 2


async def test_a_refused_command_is_judged_once_and_never_parked(platform: Platform) -> None:
    before = judged(platform)
    refused = await platform.call_tool("execute", {"command": "sudo id"}, profile="safe")
    assert refused.error_code == "policy_denied", refused.text
    assert judged(platform) - before == 1
    assert await platform.pending_approvals() == []
