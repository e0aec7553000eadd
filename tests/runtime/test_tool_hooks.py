"""Hooks around tool calls in the pipeline: Claude Code hook scripts, unchanged, on execute,
on an MCP tool and inside a subagent's call; rewrites in declared order; failures block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corral.platform import Platform
from tests.packages.core.conftest import MCP_SERVER
from tests.runtime.conftest import ScriptWriter, call
from tests.runtime.hooks.conftest import pre_tool_use, script


def hooks_of(event: str, matcher: str, *commands: str, **options: Any) -> dict[str, Any]:
    handlers = [{"type": "command", "command": c, **options} for c in commands]
    return {event: [{"matcher": matcher, "hooks": handlers}]}


async def test_the_documented_rm_rf_validator_blocks_execute_and_nothing_runs(
    rt_platform: Platform,
) -> None:
    victim = rt_platform.settings.drive_dir / "victim"
    victim.mkdir()
    await rt_platform.admin.set_live("hooks", pre_tool_use("Bash", script("block_rm_rf.sh")))
    result = await rt_platform.call_tool("execute", {"command": "rm -rf victim"})
    assert result.is_error and result.error_code == "hook_blocked", result.text
    assert "blocked by hook block_rm_rf.sh: Blocked: recursive forced removal" in result.text
    assert victim.is_dir()
    assert result.data is not None
    [record] = result.data["hooks"]
    assert (record["event"], record["outcome"]) == ("PreToolUse", "deny")
    fine = await rt_platform.call_tool("execute", {"command": "echo still here"})
    assert not fine.is_error and "still here" in fine.text, fine.text


async def test_two_rewriting_hooks_apply_in_declared_order_every_time(
    rt_platform: Platform,
) -> None:
    first, second = f"{script('append_tag.py')} one", f"{script('append_tag.py')} two"
    await rt_platform.admin.set_live("hooks", pre_tool_use("execute", first, second))
    for _ in range(3):
        result = await rt_platform.call_tool("execute", {"command": "echo start"})
        assert not result.is_error and "start one two" in result.text, result.text


async def test_a_rewritten_input_is_validated_again(rt_platform: Platform) -> None:
    await rt_platform.admin.set_live("hooks", pre_tool_use("todos", script("add_timeout.py")))
    result = await rt_platform.call_tool("todos", {"plan": {"goal": "ship it"}})
    # add_timeout.py adds "timeout", which todos does not take: the schema refuses it.
    assert result.is_error and result.error_code == "invalid_arguments", result.text
    assert "timeout" in result.text


async def test_post_tool_use_context_reaches_the_model(rt_platform: Platform) -> None:
    await rt_platform.admin.set_live(
        "hooks", hooks_of("PostToolUse", "Bash", script("post_context.py"))
    )
    result = await rt_platform.call_tool("execute", {"command": "printf 'a\\nb\\nc\\n'"})
    assert not result.is_error
    assert "execute printed" in result.text and "review them." in result.text, result.text


async def test_ask_parks_the_call_and_the_approved_call_is_not_hooked_again(
    rt_platform: Platform,
) -> None:
    ask = (
        'echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
        '"permissionDecision": "ask", "permissionDecisionReason": "a person decides"}}\''
    )
    tagged = f"{script('append_tag.py')} once"
    await rt_platform.admin.set_live("hooks", pre_tool_use("execute", tagged, ask))
    parked = await rt_platform.call_tool("execute", {"command": "echo asked"}, profile="auto")
    assert parked.status == "pending" and "a person decides" in parked.text, parked.text
    assert parked.data is not None
    approval_id = parked.data["approval_id"]
    await rt_platform.decide_approval(approval_id, "approve")
    decided = await rt_platform.approval_result(approval_id)
    assert decided is not None and not decided.is_error, decided
    assert "asked once\n" in decided.text, decided.text


async def test_a_hook_that_times_out_crashes_or_prints_garbage_blocks_by_default(
    rt_platform: Platform, tmp_path: Path
) -> None:
    cases = {
        "sleep 5": "timed out after 1 s",
        "exit 3": "exited with status 3",
        "echo not json": "not a JSON object",
        "/nonexistent/hook.sh": "exited with status 127",
    }
    for command, reason in cases.items():
        await rt_platform.admin.set_live("hooks", pre_tool_use("execute", command, timeout=1))
        result = await rt_platform.call_tool("execute", {"command": "echo ran"})
        assert result.error_code == "hook_blocked" and reason in result.text, (command, result)
    await rt_platform.admin.set_live("hooks", pre_tool_use("execute", "exit 3", on_error="allow"))
    allowed = await rt_platform.call_tool("execute", {"command": "echo ran"})
    assert not allowed.is_error and "ran" in allowed.text
    assert allowed.data is not None and allowed.data["hooks"][0]["outcome"] == "error"


async def test_an_mcp_tool_is_hooked_by_its_claude_code_name(rt_platform: Platform) -> None:
    added = await rt_platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "demo", "command": list(MCP_SERVER)}]}
    )
    assert not added.is_error, added.text
    refuse = "echo 'adding is off today' >&2; exit 2"
    await rt_platform.admin.set_live("hooks", pre_tool_use("mcp__demo__add", refuse))
    result = await rt_platform.call_tool("demo_add", {"a": 1, "b": 2})
    assert result.error_code == "hook_blocked" and "adding is off today" in result.text


async def test_a_subagents_call_is_hooked_too(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    victim = rt_platform.settings.drive_dir / "victim"
    victim.mkdir()
    child = write_script(
        {"tool_calls": [call("execute", command="rm -rf victim")]},
        [{"when_result_contains": "hook_blocked", "text": "The hook stopped me."}, {"text": "?"}],
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="Clean up", model=child)]},
        [{"when_result_contains": "The hook stopped me.", "text": "Child was blocked."},
         {"text": "Child ran it."}],
    )  # fmt: skip
    await rt_platform.admin.set_live("hooks", pre_tool_use("Bash", script("block_rm_rf.sh")))
    turn = await rt_platform.chat("go", model=parent, profile="auto")
    assert turn.text == "Child was blocked." and victim.is_dir()


async def test_permission_request_hooks_answer_for_a_person_and_notification_hears_of_a_wait(
    rt_platform: Platform, tmp_path: Path
) -> None:
    allow = (
        'echo \'{"hookSpecificOutput": {"hookEventName": "PermissionRequest", '
        '"decision": {"behavior": "allow"}}}\''
    )
    heard = rt_platform.settings.drive_dir / "heard.json"
    listen = f"cat > {heard}"
    await rt_platform.admin.set_live(
        "hooks",
        {**hooks_of("PermissionRequest", "execute", allow),
         **hooks_of("Notification", "permission_prompt", listen)},
    )  # fmt: skip
    ran = await rt_platform.call_tool("execute", {"command": "echo let through"}, profile="safe")
    assert not ran.is_error and "let through" in ran.text, ran.text
    assert not heard.exists()  # nobody was asked
    await rt_platform.admin.set_live("hooks", hooks_of("Notification", "permission_prompt", listen))
    parked = await rt_platform.call_tool("execute", {"command": "echo wait"}, profile="safe")
    assert parked.status == "pending"
    assert '"message": "Corral needs your permission to use execute"' in heard.read_text()
