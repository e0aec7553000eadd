"""`corral trace RUN` in real processes: a run traced into the local store only
(``OTEL_TRACES_EXPORTER=corral``) is shown by a later process as a tree with durations."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.processes import corral_cli, script_model


def run(data_dir: Path, *args: str, traced: bool = True) -> subprocess.CompletedProcess[str]:
    otel: dict[str, str | None] = {k: None for k in os.environ if k.startswith("OTEL_")}
    if traced:
        otel["OTEL_TRACES_EXPORTER"] = "corral"
    return corral_cli(data_dir, *args, env=otel, demo=True)


def test_a_traced_runs_tree_is_printed_by_a_later_process(data_dir: Path, tmp_path: Path) -> None:
    model = script_model(
        tmp_path,
        "echo",
        {"text": "Let me echo.", "tool_calls": [{"name": "echo", "args": {"text": "hi"}}]},
        {"text": "It said hi."},
    )
    chat = run(data_dir, "chat", "--json", "--model", model, "say hi")
    assert chat.returncode == 0, chat.stderr
    run_id = json.loads(chat.stdout)["run_id"]

    # Read by a process that does not trace: the store is there for any reader.
    shown = run(data_dir, "trace", run_id, traced=False)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("trace ") and " spans, " in lines[0]
    assert lines[1].startswith("invoke_agent default  ") and " ms at +0.000 ms" in lines[1]
    body = "\n".join(lines[2:])
    assert "├─ chat " in body and "└─ chat " in body and "├─ execute_tool echo  " in body
    assert "gen_ai.tool.name = echo" not in body

    verbose = run(data_dir, "trace", run_id, "-v", traced=False)
    assert "gen_ai.tool.name = echo" in verbose.stdout
    assert f"corral.run.id = {run_id}" in verbose.stdout

    as_json = json.loads(run(data_dir, "trace", run_id, "--json", traced=False).stdout)
    spans = as_json["spans"]
    assert spans[0]["name"] == "invoke_agent default" and spans[0]["depth"] == 0
    tool = next(s for s in spans if s["name"] == "execute_tool echo")
    assert tool["parent_id"] == spans[0]["span_id"] and tool["depth"] == 1
    assert tool["duration_ms"] >= 0 and tool["offset_ms"] >= 0


def test_unknown_and_untraced_runs_are_clear_errors(data_dir: Path, tmp_path: Path) -> None:
    unknown = run(data_dir, "trace", "run_nope")
    assert unknown.returncode == 2
    assert "run_nope" in unknown.stderr and "Traceback" not in unknown.stderr

    model = script_model(tmp_path, "hello", {"text": "Hello."})
    chat = run(data_dir, "chat", "--json", "--model", model, "hi", traced=False)
    assert chat.returncode == 0, chat.stderr
    run_id = json.loads(chat.stdout)["run_id"]
    untraced = run(data_dir, "trace", run_id)
    assert untraced.returncode == 2
    assert "has no stored trace" in untraced.stderr
    assert "OTEL_TRACES_EXPORTER=corral" in untraced.stderr.replace("\n", "")
    assert "Traceback" not in untraced.stderr
