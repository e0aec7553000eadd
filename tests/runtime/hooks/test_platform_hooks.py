"""Hooks in an open platform: the file and the admin-only live setting, both applied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import corral
from corral.errors import ConfigError, UsageError
from corral.platform import Platform
from tests.conftest import DEMO
from tests.packages.core.conftest import MCP_SERVER
from tests.runtime.hooks.conftest import pre_tool_use, script


def write_file(data_dir: Path, config: Any) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (data_dir / "hooks.json").write_text(text, encoding="utf-8")


async def test_a_broken_hooks_file_refuses_to_start_with_the_reason(data_dir: Path) -> None:
    write_file(data_dir, {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "cmd"}]}]})
    with pytest.raises(ConfigError) as caught:
        await corral.open_platform(data_dir, package_paths=[DEMO])
    assert "hooks.PreToolUse[0].hooks[0].type must be 'command' or 'http'" in str(caught.value)


async def test_the_live_setting_is_checked_on_save_and_runs_after_the_file(
    data_dir: Path,
) -> None:
    write_file(data_dir, pre_tool_use("Bash", f"{script('append_tag.py')} file"))
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        with pytest.raises(UsageError) as caught:
            await platform.admin.set_live("hooks", {"PreToolUse": [{"matcher": "mcp__memory",
                                                                    "hooks": []}]})  # fmt: skip
        assert "live setting 'hooks': hooks.PreToolUse[0].matcher 'mcp__memory' can never" in (
            str(caught.value)
        )
        live = pre_tool_use("execute", f"{script('append_tag.py')} live")
        await platform.admin.set_live("hooks", json.dumps(live))  # as `corral settings set`
        outcome = await platform.hooks.run(
            "PreToolUse", {"tool_input": {"command": "ls"}}, tool="execute"
        )
        assert outcome.updated_input == {"command": "ls file live"}
        assert [r.source.split(" ")[0] for r in outcome.records] == [
            str(data_dir / "hooks.json"),
            "live",
        ]


async def test_configured_follows_the_live_setting_without_awaiting(platform: Platform) -> None:
    assert not platform.hooks.configured
    await platform.admin.set_live("hooks", pre_tool_use("Bash", "true"))
    await platform.config.snapshot()  # as every dispatch does
    assert platform.hooks.configured
    await platform.admin.reset_live("hooks")
    await platform.config.snapshot()
    assert not platform.hooks.configured


async def test_mcp_tools_match_as_claude_code_names_them(platform: Platform) -> None:
    item = {"kind": "mcp", "name": "demo", "command": list(MCP_SERVER)}
    added = await platform.call_tool("connect", {"add": [item]})
    assert not added.is_error, added.text
    await platform.admin.set_live(
        "hooks",
        {"PreToolUse": [{"matcher": "mcp__demo__add",
                         "hooks": [{"type": "command", "command": script("echo_env.py")}]}]},
    )  # fmt: skip
    outcome = await platform.hooks.run("PreToolUse", {"tool_input": {"a": 1}}, tool="demo_add")
    seen = json.loads(outcome.system_messages[0])["input"]
    assert seen["tool_name"] == "mcp__demo__add" and seen["tool_input"] == {"a": 1}
    other = await platform.hooks.run("PreToolUse", {"tool_input": {}}, tool="demo_note")
    assert other.records == []


def corral_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "corral", "hooks", *args], capture_output=True, text=True, env=env
    )


def test_the_cli_lists_and_dry_runs_the_hooks(data_dir: Path) -> None:
    write_file(data_dir, pre_tool_use("Bash", script("block_rm_rf.sh")))
    listed = corral_cli(data_dir, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["hooks"]
    assert row["event"] == "PreToolUse" and row["matcher"] == "Bash"
    assert row["runs"] == script("block_rm_rf.sh") and row["on_error"] == "block"
    assert json.loads(listed.stdout)["problems"] == []
    blocked = corral_cli(
        data_dir, "test", "PreToolUse", "--input", '{"tool_input": {"command": "rm -rf /"}}',
        "--tool", "execute",
    )  # fmt: skip
    assert blocked.returncode == 1, blocked.stderr
    assert "decision: deny" in blocked.stdout
    assert "blocked by hook block_rm_rf.sh" in blocked.stdout
    passed = corral_cli(
        data_dir, "test", "PreToolUse", "--input", '{"tool_input": {"command": "ls"}}',
        "--tool", "execute",
    )  # fmt: skip
    assert passed.returncode == 0 and "decision: no opinion" in passed.stdout
    wrong = corral_cli(data_dir, "test", "PreToolUses", "--input", "{}")
    assert wrong.returncode == 2 and "is not a hook event" in wrong.stderr
    bad_input = corral_cli(data_dir, "test", "PreToolUse", "--input", "[1]")
    assert bad_input.returncode == 2 and "--input must be a JSON object" in bad_input.stderr
    assert "Traceback" not in wrong.stderr + bad_input.stderr
    write_file(data_dir, pre_tool_use("Bash", "$CLAUDE_PROJECT_DIR/.claude/hooks/check.sh"))
    warned = corral_cli(data_dir, "list", "--json")
    assert warned.returncode == 0 and "which the agent can write" in warned.stdout


async def test_the_hooks_stage_is_in_the_chain_only_while_a_hook_is_configured(
    platform: Platform,
) -> None:
    dispatcher = platform.kernel.dispatcher
    assert "hooks" in [s.name for s in dispatcher.stages]
    passed = await platform.call_tool("echo", {"text": "hi"})
    assert not passed.is_error and "hooks" not in [s.name for s in dispatcher.chained]
    await platform.admin.set_live("hooks", pre_tool_use("echo", "echo no echo >&2; exit 2"))
    blocked = await platform.call_tool("echo", {"text": "hi"})
    assert blocked.is_error and "blocked by hook" in blocked.text and "no echo" in blocked.text
    assert "hooks" in [s.name for s in dispatcher.chained]
    await platform.admin.reset_live("hooks")
    again = await platform.call_tool("echo", {"text": "hi"})
    assert not again.is_error and "hooks" not in [s.name for s in dispatcher.chained]
