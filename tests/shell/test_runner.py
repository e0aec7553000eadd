"""Running commands: Stop and timeout end the whole process group; output stays bounded."""

from __future__ import annotations

import itertools
import time
import tracemalloc
from pathlib import Path

import pytest

from corral import Cancellation
from corral.platform import Platform
from corral.shell.runner import DRAIN_SECONDS
from tests.shell.conftest import DAEMON, dead, host_pids, needs_bwrap, stop_when

# A command that starts a grandchild (written to a pid file), a second-level grandchild,
# then says it is ready and waits on them.
FAMILY = "sleep {token}1 & echo $! > grandchild.pid; ( sleep {token}2 & wait ) & echo ready; wait"


async def test_stop_ends_grandchildren_unconfined(unconfined: Platform, drive: Path) -> None:
    cancellation = Cancellation()
    result = await unconfined.call_tool(
        "execute",
        {"command": FAMILY.format(token=41)},
        cancellation=cancellation,
        output=stop_when("ready", cancellation),
    )
    assert result.status == "stopped" and result.error_code == "stopped"
    assert result.text.startswith("ready\n") and "stopped after" in result.text
    pid = int((drive / "grandchild.pid").read_text())
    assert dead(pid)
    assert host_pids("sleep 412") == []


async def test_timeout_ends_grandchildren_that_ignore_sigterm(
    unconfined: Platform, drive: Path
) -> None:
    command = "trap '' TERM; " + FAMILY.format(token=43).replace(
        "sleep 431 &", "bash -c \"trap '' TERM; sleep 431\" &"
    )
    started = time.monotonic()
    result = await unconfined.call_tool("execute", {"command": command, "timeout": 1})
    assert result.status == "timed_out" and result.error_code == "timed_out"
    assert "ready" in result.text and "timed out after" in result.text
    assert time.monotonic() - started < 5  # 1 s, a 0.2 s grace, then SIGKILL
    pid = int((drive / "grandchild.pid").read_text())
    assert dead(pid)
    assert host_pids("sleep 43") == []


@needs_bwrap
async def test_stop_and_timeout_end_the_whole_sandbox(fast: Platform, drive: Path) -> None:
    cancellation = Cancellation()
    seen: list[int] = []

    def sink(stream: str, text: str) -> None:
        if "ready" in text and not cancellation.cancelled:
            seen.extend(host_pids("sleep 451"))  # sandboxed pids are namespaced: find host ones
            cancellation.cancel()

    stopped = await fast.call_tool(
        "execute", {"command": FAMILY.format(token=45)}, cancellation=cancellation, output=sink
    )
    assert stopped.status == "stopped" and stopped.data is not None
    assert stopped.data["confinement"] == "bubblewrap" and "ready" in stopped.text
    assert seen and all(dead(pid) for pid in seen)
    assert host_pids("sleep 45") == []
    timed = await fast.call_tool(
        "execute", {"command": "setsid sleep 471 & " + FAMILY.format(token=47), "timeout": 1}
    )
    assert timed.status == "timed_out" and "ready" in timed.text
    assert host_pids("sleep 47") == []  # even the one that left the process group


async def test_a_polite_command_cleans_up_on_sigterm(unconfined: Platform) -> None:
    cancellation = Cancellation()
    result = await unconfined.call_tool(
        "execute",
        {"command": "trap 'echo cleaning up; exit 7' TERM; echo ready; sleep 300 & wait"},
        cancellation=cancellation,
        output=stop_when("ready", cancellation),
    )
    assert result.status == "stopped" and "cleaning up" in result.text
    assert result.data is not None and result.data["exit_code"] == 7


async def test_the_result_keeps_the_newest_lines_within_the_cap(fast: Platform) -> None:
    await fast.admin.set_live("shell_max_output", 1_000)
    result = await fast.call_tool("execute", {"command": "seq -f 'line %g' 5000"})
    assert not result.is_error and result.data is not None
    text = result.text
    assert text.startswith("[… trimmed ") and "shell_max_output is 1,000" in text
    assert "line 5000\n" in text and "line 1\n" not in text
    body = text.split("\n", 1)[1].rsplit("\n[exit code", 1)[0]
    assert len(body) <= 1_000 and body.startswith("line ")  # cut on a line boundary
    assert result.data["trimmed_chars"] == result.data["output_chars"] - len(body) - 1


async def test_live_frames_are_paced_and_capped(fast: Platform) -> None:
    await fast.admin.set_live("live_shell_flush_ms", 50)
    await fast.admin.set_live("live_shell_frame_max", 300)
    await fast.admin.set_live("live_shell_stream_cap", 3_000)
    frames: list[tuple[float, str, str]] = []
    command = "for i in $(seq 40); do seq -f 'x%g' 200; echo err$i >&2; sleep 0.01; done"
    result = await fast.call_tool(
        "execute",
        {"command": command},
        output=lambda stream, text: frames.append((time.monotonic(), stream, text)),
    )
    assert not result.is_error
    stdout = [(at, text) for at, stream, text in frames if stream == "stdout"]
    marker = "[live output stopped"
    assert all(len(text) <= 300 for _, text in stdout if marker not in text)
    assert marker in stdout[-1][1] and sum(marker in t for _, t in stdout) == 1
    assert sum(len(t) for _, t in stdout[:-1]) <= 3_000
    assert any("characters skipped to keep up" in t for _, t in stdout)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(stdout)]
    assert gaps and min(gaps) >= 0.045  # never two frames of a stream within the interval
    assert any(stream == "stderr" for _, stream, _ in frames)


@pytest.mark.parametrize("megabytes", [200])
async def test_a_firehose_does_not_grow_memory(fast: Platform, megabytes: int) -> None:
    command = f"head -c {megabytes}000000 /dev/zero | tr '\\0' 'y'"
    tracemalloc.start()
    try:
        result = await fast.call_tool("execute", {"command": command, "timeout": 120})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.data is not None and result.data["output_chars"] == megabytes * 1_000_000
    assert result.data["exit_code"] == 0
    assert peak < 16 * 1024 * 1024, f"peak Python allocations {peak / 1e6:.1f} MB"


async def test_a_timeout_returns_on_time_when_a_detached_process_holds_stdout(
    unconfined: Platform, drive: Path, reaper: list[str]
) -> None:
    # Unconfined nothing kills a double-forked setsid daemon (that is the operator's opt-in),
    # but the call must not wait for it: it stops reading after a short bound and says so.
    reaper.append("holder-" + "1f07")
    (drive / "daemon.py").write_text(DAEMON)
    started = time.monotonic()
    result = await unconfined.call_tool(
        "execute", {"command": "python3 daemon.py holder-1f07 loud stay", "timeout": 2}
    )
    took = time.monotonic() - started
    assert result.status == "timed_out" and "daemon up" in result.text, result.text
    assert took < 2 + 0.2 + DRAIN_SECONDS + 1.5, f"the call took {took:.1f} s"
    assert "kept the output open" in result.text


@needs_bwrap
async def test_bubblewrap_ends_a_detached_process_holding_stdout_on_timeout(
    fast: Platform, drive: Path, reaper: list[str]
) -> None:
    reaper.append("holder-" + "2e4d")
    (drive / "daemon.py").write_text(DAEMON)
    started = time.monotonic()
    result = await fast.call_tool(
        "execute", {"command": "python3 daemon.py holder-2e4d loud stay", "timeout": 2}
    )
    took = time.monotonic() - started
    assert result.data is not None and result.data["confinement"] == "bubblewrap"
    assert result.status == "timed_out" and "daemon up" in result.text
    assert took < 2 + 0.2 + 1.5, f"the call took {took:.1f} s"  # no drain wait: all gone
    assert host_pids("holder-2e4d") == [] and "kept the output open" not in result.text
