"""Hooks run for real: Claude Code scripts unchanged, deterministic combining, failures."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from corral.errors import ConfigError
from corral.runtime.hooks import tool_hook_input
from tests.runtime.hooks.conftest import MakeHooks, pre_tool_use, script


async def test_a_claude_code_bash_validator_blocks_rm_rf_with_exit_2(
    make_hooks: MakeHooks,
) -> None:
    hooks = make_hooks(pre_tool_use("Bash", script("block_rm_rf.sh")))
    assert hooks.configured
    ok = await hooks.run("PreToolUse", {"tool_input": {"command": "ls -l"}}, tool="execute")
    assert ok.decision is None and not ok.blocked
    assert [r.outcome for r in ok.records] == ["no_opinion"]
    bad = await hooks.run(
        "PreToolUse", {"tool_input": {"command": "cd /x && rm -rf build"}}, tool="execute"
    )
    assert bad.blocked
    assert bad.reason == (
        "blocked by hook block_rm_rf.sh: Blocked: recursive forced removal is not allowed "
        "in this project"
    )
    other = await hooks.run("PreToolUse", {"tool_input": {"uri": "x"}}, tool="fs_read")
    assert other.records == []  # "Bash" is execute only


async def test_a_python_hook_rewrites_the_input_and_a_post_hook_adds_context(
    make_hooks: MakeHooks,
) -> None:
    config = pre_tool_use("execute", f"python3 {script('add_timeout.py')}")
    config["hooks"]["PostToolUse"] = [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": script("post_context.py")}]}
    ]
    hooks = make_hooks(config)
    before = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="execute")
    assert before.decision == "allow"
    assert before.updated_input == {"command": "ls", "timeout": 30}
    assert before.reason == "allowed by hook add_timeout.py: a timeout was added"
    after = await hooks.run(
        "PostToolUse",
        {"tool_input": {"command": "ls"}, "tool_response": "a\nb\nc\n"},
        tool="execute",
    )
    assert after.decision is None
    assert after.additional_context == ["execute printed 3 lines; review them."]


async def test_two_rewriting_hooks_give_the_same_result_every_run(make_hooks: MakeHooks) -> None:
    tag = script("append_tag.py")
    hooks = make_hooks(pre_tool_use("*", f"{tag} first", f"{tag} second", f"{tag} third"))
    results = set()
    for _ in range(3):
        outcome = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="execute")
        assert outcome.updated_input is not None
        results.add(outcome.updated_input["command"])
    assert results == {"ls first second third"}


async def test_deny_beats_ask_beats_allow_and_the_first_deny_ends_the_chain(
    make_hooks: MakeHooks,
) -> None:
    def answer(decision: str) -> str:
        output = {
            "hookSpecificOutput": {
                "permissionDecision": decision,
                "permissionDecisionReason": f"said {decision}",
            }
        }
        return f"echo '{json.dumps(output)}'"  # fmt: skip

    hooks = make_hooks(pre_tool_use("*", answer("allow"), answer("ask"), answer("allow")))
    asked = await hooks.run("PreToolUse", {"tool_input": {}}, tool="fs_read")
    assert asked.decision == "ask" and asked.reason == "sent for approval by hook echo: said ask"
    hooks = make_hooks(pre_tool_use("*", answer("ask"), answer("deny"), answer("allow")))
    denied = await hooks.run("PreToolUse", {"tool_input": {}}, tool="fs_read")
    assert denied.decision == "deny" and len(denied.records) == 2


async def test_the_hook_runs_as_the_sandbox_uid_with_a_clean_environment(
    make_hooks: MakeHooks, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    monkeypatch.setenv("CORRAL_SECRET_KEY", "x" * 40)
    hooks = make_hooks(pre_tool_use("Bash", script("echo_env.py")))
    given = tool_hook_input(
        arguments={"command": "ls"}, call_id="call_1", conversation_id="c_1", profile="safe"
    )
    outcome = await hooks.run("PreToolUse", given, tool="execute")
    seen = json.loads(outcome.system_messages[0])
    assert seen["uid"] == (65534 if os.geteuid() == 0 else os.getuid())
    assert seen["cwd"] == str(project_dir)
    assert seen["env"]["CLAUDE_PROJECT_DIR"] == str(project_dir)
    assert "OPENAI_API_KEY" not in seen["env"] and "CORRAL_SECRET_KEY" not in seen["env"]
    assert seen["input"] == {
        "session_id": "c_1",
        "transcript_path": "",
        "cwd": str(project_dir),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "execute",
        "tool_input": {"command": "ls"},
        "tool_use_id": "call_1",
    }


@pytest.mark.parametrize(
    ("command", "error"),
    [
        ("exit 1", "exited with status 1"),
        ("/nonexistent/check.sh", "exited with status 127"),
        ("no-such-interpreter /tmp/x.py", "exited with status 127"),
        ("echo 'this is not json'", "printed something that is not a JSON object"),
        ("echo '[1, 2]'", "printed something that is not a JSON object"),
        ("""echo '{"hookSpecificOutput": {"permissionDecision": "maybe"}}'""", "must be 'allow'"),
    ],
)
async def test_a_failing_hook_blocks_by_default_and_allows_when_so_set(
    make_hooks: MakeHooks, command: str, error: str
) -> None:
    hooks = make_hooks(pre_tool_use("*", command))
    blocked = await hooks.run("PreToolUse", {"tool_input": {}}, tool="execute")
    assert blocked.blocked and "the hook failed: " in blocked.reason
    assert error in blocked.reason and error in blocked.records[0].error
    assert blocked.records[0].outcome == "error"
    hooks = make_hooks(pre_tool_use("*", command, on_error="allow"))
    allowed = await hooks.run("PreToolUse", {"tool_input": {}}, tool="execute")
    assert allowed.decision is None and error in allowed.records[0].error


def running(marker: str) -> bool:
    """Whether a live process has ``marker`` in its command line."""
    for process in Path("/proc").iterdir():
        try:
            if process.name.isdigit() and marker.encode() in (process / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


async def test_a_hook_that_times_out_is_killed_with_its_children(make_hooks: MakeHooks) -> None:
    hooks = make_hooks(pre_tool_use("*", script("sleep_forever.sh"), timeout=0.5))
    started = time.monotonic()
    outcome = await hooks.run("PreToolUse", {"tool_input": {}}, tool="execute")
    assert time.monotonic() - started < 5
    assert outcome.blocked
    assert outcome.reason.endswith("the hook failed: timed out after 0.5 s and was killed")
    assert not running("corral-hook-sleeper-child")


async def test_plain_text_is_context_for_a_prompt_and_exit_2_refuses_it(
    make_hooks: MakeHooks,
) -> None:
    hooks = make_hooks(
        {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'Sprint 12'"}]}]}
    )
    said = await hooks.run("UserPromptSubmit", {"prompt": "hello"})
    assert said.additional_context == ["Sprint 12"] and said.decision is None
    hooks = make_hooks(
        {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "echo 'no secrets' >&2; exit 2"}]}
            ]
        }
    )
    refused = await hooks.run("UserPromptSubmit", {"prompt": "my password is x"})
    assert refused.blocked and refused.reason == "blocked by hook echo: no secrets"


async def test_a_broken_file_refuses_to_start_then_keeps_the_previous_hooks(
    make_hooks: MakeHooks, project_dir: Path
) -> None:
    file = project_dir / "hooks.json"
    file.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not readable JSON"):
        make_hooks()
    hooks = make_hooks(pre_tool_use("Bash", script("block_rm_rf.sh")))
    assert hooks.problems == []
    file.write_text(json.dumps({"PreToolUse": [{"matcher": "mcp__memory", "hooks": []}]}))
    os.utime(file, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    assert hooks.configured
    assert [g.matcher.text for g in hooks.groups] == ["Bash"]  # still in force
    assert "hooks.PreToolUse[0].matcher 'mcp__memory' can never match" in hooks.problems[0]
    file.unlink()
    assert not hooks.configured and hooks.problems == []
