"""Sandboxed spawn against bubblewrap's own floor, measured in the same run.

    .venv/bin/python bench/sandbox_spawn.py [--spawns N] [--target 1.5]

The floor is ``bwrap --unshare-all --ro-bind / / true``: namespaces and one mount, the
least any bubblewrap sandbox costs. The measured spawn is what a command gets: the mount
plan for one writable source, the argv, the unprivileged uid, the seccomp program on a
pipe, the switch to the sandbox uid when run as root, ``true`` run to its end with output
piped. Both are started the same way and interleaved, so machine noise falls on both.
Prints JSON with medians and the ratio; exits 1 when the ratio misses the target (issue 18:
at most 1.5x the floor), 2 when bubblewrap cannot run here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from corral.shell.confinement import check_bubblewrap
from corral.shell.runner import ProcessSpec, spawn_process
from corral.shell.sandbox import BoundSource, SandboxFiles, bwrap_argv, plan_mounts
from corral.shell.seccomp import build_filter

UID = 65534


PROGRAM = build_filter()
"""Built once, as the platform's confiner caches it."""


def sandboxed_spec(files: SandboxFiles, binary: str, work: Path, argv: list[str]) -> ProcessSpec:
    """A command's spec as the bubblewrap tier builds it (one writable source)."""
    mounts = plan_mounts(
        files,
        [BoundSource(name="work", root=str(work), writable=True)],
        data_dir=str(work / "data"),
        protected=(),
        network=False,
    )
    full = bwrap_argv(binary, mounts, network=False, cwd=str(work), argv=argv, uid=UID)
    return ProcessSpec(
        argv=full,
        env={"PATH": "/usr/bin:/bin"},
        cwd=str(work),
        sandboxed=True,
        seccomp=PROGRAM,
        run_as=UID if os.geteuid() == 0 else None,  # as the platform runs it (as root)
    )


async def _timed(make: Callable[[], ProcessSpec]) -> float:
    """Build the spec and run it to its end: both count."""
    started = time.perf_counter()
    spec = make()
    process = await spawn_process(spec)
    _, err = await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{spec.argv[0]} exited {process.returncode}: {err.decode()[-300:]}")
    return time.perf_counter() - started


async def measure(spawns: int, work: Path) -> dict[str, float] | None:
    files = SandboxFiles.write(work / "sandbox", uid=UID)
    check, binary = await check_bubblewrap("bwrap", files, uid=UID)
    if not check.works or binary is None:
        print(f"bubblewrap cannot run here: {check.reason}", file=sys.stderr)
        return None
    floor = ProcessSpec(
        argv=[binary, "--unshare-all", "--ro-bind", "/", "/", "true"],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        sandboxed=True,
    )
    floors, sandboxed = [], []

    def command() -> ProcessSpec:
        return sandboxed_spec(files, binary, work, ["/bin/true"])

    for _ in range(3):  # warm the page cache and the binary
        await _timed(lambda: floor)
        await _timed(command)
    for _ in range(spawns):
        floors.append(await _timed(lambda: floor))
        sandboxed.append(await _timed(command))
    floor_ms = statistics.median(floors) * 1000
    sandbox_ms = statistics.median(sandboxed) * 1000
    return {
        "spawns": spawns,
        "floor_ms": round(floor_ms, 2),
        "sandboxed_ms": round(sandbox_ms, 2),
        "ratio": round(sandbox_ms / floor_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=100)
    parser.add_argument("--target", type=float, default=1.5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="corral-bench-"))
    work.chmod(0o755)  # as root, bubblewrap runs as the sandbox uid, which must pass through
    (work / "data").mkdir()  # the data folder the mount plan hides exists, as on a platform
    try:
        result = asyncio.run(measure(args.spawns, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if result is None:
        raise SystemExit(2)
    result["target"] = args.target
    result["met"] = result["ratio"] <= args.target
    print(json.dumps(result))
    if not result["met"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
