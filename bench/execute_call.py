"""``true`` through the ``execute`` tool against bubblewrap's floor, measured in the same run.

    .venv/bin/python bench/execute_call.py [--calls N] [--target 1.5] [--profile FILE]

The floor is ``bwrap --unshare-all --ro-bind / / true`` started from Python the way the
runner starts a process (``bench/sandbox_spawn.py``). The measured call is the whole tool
call an agent makes: ``platform.call_tool("execute", {"command": "true"})`` on a platform
opened with the bubblewrap tier (analysis, gate, policy, the mount plan, seccomp, the
egress mode, the run, output capture, shaping). Network mode ``off`` and mode ``proxy``
with the default empty egress policy are timed alike; the modes alternate in rounds and
every call follows a floor spawn, so machine noise falls on both. Exits 1 when a ratio
misses the target (issue 39: at most 1.5x the floor), 2 when bubblewrap cannot run here.
Each call's CPU time is also shown (the platform's, every thread, plus its ended child
processes'), informative only: on a loaded machine it is steadier than the wall time.
``--profile FILE`` writes a cProfile of the off-mode calls instead of judging.

"sandbox child alone" spawns, the same way, the very process the tool's last off-mode call
started (its bubblewrap command line, mounts, seccomp program, uid and environment, recorded
on the way): what the call costs before any of the platform's own work, so the gap between
it and the floor is the sandbox's, and the gap between it and the call is the platform's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import corral
from corral.shell.runner import ProcessSpec, Spawner, spawn_process
from outcome import Figure, finish, skip

MODES = {"off": "off", "proxy": "proxy"}
"""Live ``shell_network_mode`` per figure; the egress policy stays empty (the default), so
mode proxy must fall back to no network, at no cost."""

ROUNDS = 4
"""The modes alternate in rounds of calls (a live-setting change is not what is timed)."""


def _cpu() -> float:
    """CPU seconds so far: this process's (every thread) and its reaped children's."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def _timed(
    times: dict[str, list[float]], name: str, run: Callable[[], Awaitable[float]]
) -> None:
    """Run one spawn or call; keep its wall time under ``name``, its CPU time beside it."""
    cpu = _cpu()
    times[name].append(await run())
    times[f"{name} cpu"].append(_cpu() - cpu)


async def _floor(binary: str) -> float:
    spec = ProcessSpec(
        argv=[binary, "--unshare-all", "--ro-bind", "/", "/", "true"],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        sandboxed=True,
    )
    return await _spawned(spec, "the floor")


async def _spawned(spec: ProcessSpec, what: str = "the sandbox child alone") -> float:
    """Seconds from spawning ``spec`` the runner's way until it exited."""
    started = time.perf_counter()
    process = await spawn_process(spec)
    await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{what} exited {process.returncode}")
    return time.perf_counter() - started


def _recording(spawner: Spawner, seen: list[ProcessSpec]) -> Spawner:
    async def spawn(spec: ProcessSpec) -> asyncio.subprocess.Process:
        seen.append(spec)
        return await spawner(spec)

    return spawn


async def _call(platform: corral.Platform) -> float:
    started = time.perf_counter()
    result = await platform.call_tool("execute", {"command": "true"})
    took = time.perf_counter() - started
    if result.data is None or result.data.get("exit_code") != 0:
        raise SystemExit(f"execute true failed: {result.text}")
    if result.data["network"] != "off" or result.data["confinement"] != "bubblewrap":
        raise SystemExit(f"not a sandboxed call without network: {result.text}")
    return took


async def measure(calls: int, profile: str | None) -> dict[str, list[float]] | None:
    binary = shutil.which("bwrap")
    if binary is None:
        return None
    with tempfile.TemporaryDirectory(prefix="corral-execute-bench-", dir="/tmp") as folder:
        os.chmod(folder, 0o755)  # the sandbox uid passes through to the drive
        async with corral.open(Path(folder) / "data", sandbox="bubblewrap") as platform:
            from corral.shell.service import ShellService

            service = platform.services.require(ShellService)
            if service.status.tier != "bubblewrap":
                return None
            spawned: list[ProcessSpec] = []
            # The bench's one reach inside: the service's spawner, to record what it starts.
            service._spawner = _recording(service._spawner, spawned)
            times: dict[str, list[float]] = {
                name: []
                for base in ("floor", "off", "proxy", "child")
                for name in (base, f"{base} cpu")
            }
            modes = ("off",) if profile else ("off", "proxy")
            profiler = cProfile.Profile() if profile else None
            for _ in range(ROUNDS):
                for mode in modes:
                    # A live-setting change rebuilds the dispatch state: warm it again first.
                    await platform.admin.set_live("shell_network_mode", MODES[mode])
                    for _ in range(3):
                        await _call(platform)
                        await _floor(binary)
                    for _ in range(max(1, calls // ROUNDS)):
                        await _timed(times, "floor", lambda: _floor(binary))
                        if profiler is not None:
                            profiler.enable()
                        await _timed(times, mode, lambda: _call(platform))
                        if profiler is not None:
                            profiler.disable()
                        if mode == "off" and spawned:
                            await _timed(times, "child", partial(_spawned, spawned[-1]))
            if profiler is not None and profile is not None:
                profiler.dump_stats(profile)
            return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--target", type=float, default=1.5)
    parser.add_argument("--profile", help="write a cProfile of the off-mode calls here")
    args = parser.parse_args()
    times = asyncio.run(measure(args.calls, args.profile))
    if times is None:
        skip("execute_call", "bubblewrap cannot run here")
    floor = statistics.median(times["floor"]) * 1000
    floor_cpu = statistics.median(times["floor cpu"]) * 1000
    figures = [
        Figure(name="bwrap floor, true (median)", value=floor, unit="ms"),
        Figure(name="bwrap floor, true, CPU (median)", value=floor_cpu, unit="ms"),
    ]
    if times["child"]:
        child = statistics.median(times["child"]) * 1000
        figures.append(
            Figure(name="sandbox child alone (median)", value=child, unit="ms", baseline=floor)
        )
        figures.append(
            Figure(
                name="sandbox child alone, CPU (median)",
                value=statistics.median(times["child cpu"]) * 1000,
                unit="ms",
                baseline=floor_cpu,
            )
        )
    for mode in ("off", "proxy"):
        if not times[mode]:
            continue
        value = statistics.median(times[mode]) * 1000
        figures.append(
            Figure(
                name=f"execute true, network {mode} (median)",
                value=value,
                unit="ms",
                baseline=floor,
                target=f"<= {args.target}x",
                met=None if args.profile else value / floor <= args.target,
            )
        )
        figures.append(
            Figure(
                name=f"execute true, network {mode}, CPU (median)",
                value=statistics.median(times[f"{mode} cpu"]) * 1000,
                unit="ms",
                baseline=floor_cpu,
            )
        )
    finish("execute_call", figures)


if __name__ == "__main__":
    main()
