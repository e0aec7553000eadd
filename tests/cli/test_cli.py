"""The command line in real processes: exit codes and output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.processes import corral_cli


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return corral_cli(data_dir, *args, demo=True)


def test_tools_call_exit_codes(data_dir: Path) -> None:
    ok = run(data_dir, "tools", "call", "echo", '{"text": "hi"}')
    assert ok.returncode == 0 and ok.stdout.strip() == "hi"
    refused = run(data_dir, "tools", "call", "nope", "{}")
    assert refused.returncode == 1 and "[not_visible]" in refused.stderr
    invalid = run(data_dir, "tools", "call", "echo", '{"text": 1}', "--json")
    assert invalid.returncode == 1
    assert json.loads(invalid.stdout)["error_code"] == "invalid_arguments"
    garbage = run(data_dir, "tools", "call", "echo", "{text}")
    assert garbage.returncode == 2 and "not valid JSON" in garbage.stderr


def test_admin_commands_explain_mistakes(data_dir: Path) -> None:
    bad = run(data_dir, "settings", "set", "perf_slow_tool_ms", "soon")
    assert bad.returncode == 2 and "takes a int" in bad.stderr
    assert run(data_dir, "settings", "set", "perf_slow_tool_ms", "500").returncode == 0
    shown = json.loads(run(data_dir, "settings", "show", "--json").stdout)
    assert shown["perf_slow_tool_ms"] == 500
    unknown_tool = run(data_dir, "agents", "tool", "default", "ghost", "off")
    assert unknown_tool.returncode == 2 and "no tool named 'ghost'" in unknown_tool.stderr
    assert run(data_dir, "agents", "tool", "default", "echo", "off").returncode == 0
    assert run(data_dir, "tools", "call", "echo", '{"text": "x"}').returncode == 1
    both = run(data_dir, "sources", "grant", "data", "r", "--role", "x", "--user", "y")
    assert both.returncode == 2 and "exactly one" in both.stderr
    yolo = run(data_dir, "agents", "set", "default", "--profile", "yolo")
    assert yolo.returncode == 2 and "unknown permission profile 'yolo'" in yolo.stderr
    assert "Traceback" not in yolo.stderr


def test_agents_pin_tools_and_unpin_them(data_dir: Path) -> None:
    ghost = run(data_dir, "agents", "pin", "default", "ghost")
    assert ghost.returncode == 2 and "no tool named 'ghost'" in ghost.stderr
    assert "Traceback" not in ghost.stderr
    pinned = run(data_dir, "agents", "pin", "default", "echo")
    assert pinned.returncode == 0 and "pins echo" in pinned.stdout
    [agent] = json.loads(run(data_dir, "agents", "list", "--json").stdout)
    assert agent["pinned_tools"] == ["echo"]
    assert run(data_dir, "agents", "pin", "default").returncode == 0
    [agent] = json.loads(run(data_dir, "agents", "list", "--json").stdout)
    assert agent["pinned_tools"] == []
