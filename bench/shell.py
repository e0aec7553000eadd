"""Shell execution costs, measured in one run and printed as ratios.

    .venv/bin/python bench/shell.py [--seconds S] [--spawns N] [--firehose-mb N]

1. Analysis throughput: commands per second over the analyser's corpus (through
   ``bench/shell_analysis.py`` when present), and the time for one 100 KB script.
2. Spawn overhead: a sandboxed ``true`` (mount plan, bubblewrap, namespaces, capture)
   against a bare ``asyncio`` subprocess running ``true``.
3. Firehose capture: a command printing N MB through the runner (capture cap, live frames)
   against the producer writing to /dev/null, with the peak RSS of a fresh process doing
   it against one capturing a single line.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from corral.shell.analysis import analyze
from corral.shell.confinement import check_bubblewrap
from corral.shell.live import LivePacer
from corral.shell.runner import Execution, ProcessSpec
from corral.shell.sandbox import BoundSource, SandboxFiles, bwrap_argv, plan_mounts
from corral.shell.seccomp import build_filter
from outcome import Figure, finish

COMMANDS = [
    "ls -la",
    "git status && git diff --stat",
    "python3 -m pytest tests -q -x 2>&1 | tail -20",
    "grep -rn 'TODO' src | sort | uniq -c | head",
    "find . -name '*.py' -newer setup.cfg -exec wc -l {} +",
    "cd build && cmake .. && make -j4",
    'for f in *.md; do sed -i "s/foo/bar/g" "$f"; done',
    "npm ci && npm run build -- --prod",
    "tar -czf out.tgz dist/ && sha256sum out.tgz > out.sha",
    "cat data.csv | awk -F, '{print $2}' | sort -n | tail -5",
    "timeout 30 curl -fsS https://example.org -o page.html",
    "bash -c 'cd src && ls -1 | wc -l'",
    "docker compose ps 2>/dev/null || echo none",
    "export CI=1; make test > test.log 2>&1; echo $?",
    "xargs -n1 echo < list.txt",
    "cp -r assets/ dist/assets && rm -rf dist/tmp",
]


def _analysis_bench() -> ModuleType | None:
    """``bench/shell_analysis.py`` (the analyser's own bench), when it is there."""
    path = Path(__file__).with_name("shell_analysis.py")
    spec = importlib.util.spec_from_file_location("shell_analysis_bench", path)
    if not path.is_file() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fallback_script(size: int) -> str:
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(COMMANDS[len(lines) % len(COMMANDS)])
    return "\n".join(lines)


def bench_analysis(seconds: float) -> dict[str, object]:
    shared = _analysis_bench()
    if shared is not None:
        commands = shared.corpus_commands("allowed.txt", "evasions.txt")
        script = shared.script_of(100 * 1024)
        corpus = "tests/shell/corpus (allowed + evasions)"
    else:
        commands, script, corpus = COMMANDS, _fallback_script(100 * 1024), "bench/shell.py"
    analyze("true")
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for command in commands:
            analyze(command, cwd="/srv/project", home="/tmp/home")
        count += len(commands)
    per_second = count / (time.perf_counter() - started)
    timings = []
    for _ in range(5):
        started = time.perf_counter()
        verdict = analyze(script, cwd="/srv/project", home="/tmp/home")
        timings.append(time.perf_counter() - started)
    return {
        "corpus": corpus,
        "commands": len(commands),
        "commands_per_s": round(per_second),
        "script_100kb_ms": round(statistics.median(timings) * 1000, 1),
        "script_allowed": verdict.allowed,
    }


async def _bare_true() -> None:
    process = await asyncio.create_subprocess_exec("/bin/true")
    await process.wait()


async def _run_spec(spec: ProcessSpec) -> None:
    execution = await Execution.start(spec, capture_limit=200_000)
    await execution.finish(limit=30, grace=1)


def sandbox_spec(files: SandboxFiles, binary: str, work: Path, argv: list[str]) -> ProcessSpec:
    mounts = plan_mounts(
        files,
        [BoundSource(name="work", root=str(work), writable=True)],
        data_dir=str(work / "data"),
        protected=(),
        network=False,
    )
    full = bwrap_argv(binary, mounts, network=False, cwd=str(work), argv=argv, uid=65534)
    return ProcessSpec(
        argv=full,
        env={"PATH": "/usr/bin:/bin"},
        cwd=str(work),
        sandboxed=True,
        seccomp=build_filter(),
    )


async def bench_spawn(spawns: int, work: Path) -> dict[str, float]:
    files = SandboxFiles.write(work / "etc", uid=65534)
    status, binary = await check_bubblewrap("bwrap", files, uid=65534)
    bare = []
    for _ in range(spawns):
        started = time.perf_counter()
        await _bare_true()
        bare.append(time.perf_counter() - started)
    result: dict[str, float] = {"bare_true_ms": round(statistics.median(bare) * 1000, 2)}
    if not status.works or binary is None:
        result["sandboxed_true_ms"] = float("nan")
        return result
    sandboxed = []
    for _ in range(spawns):
        started = time.perf_counter()
        spec = sandbox_spec(files, binary, work, ["/bin/true"])
        await _run_spec(spec)
        sandboxed.append(time.perf_counter() - started)
    result["sandboxed_true_ms"] = round(statistics.median(sandboxed) * 1000, 2)
    result["ratio_sandboxed_over_bare"] = round(
        result["sandboxed_true_ms"] / result["bare_true_ms"], 1
    )
    return result


def firehose_command(megabytes: int) -> str:
    return f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' 'x' | fold -w 120"


async def firehose_child(megabytes: int) -> None:
    """Runs in a fresh process: capture the firehose, print throughput and peak RSS."""
    frames = 0

    def sink(stream: str, text: str) -> None:
        nonlocal frames
        frames += 1

    pacer = LivePacer(sink, flush_ms=100, frame_max=16_384, stream_cap=2_000_000)
    command = firehose_command(megabytes) if megabytes else "echo one line"
    spec = ProcessSpec(
        argv=["/bin/bash", "-c", command],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        sandboxed=False,
    )
    started = time.perf_counter()
    execution = await Execution.start(spec, capture_limit=200_000, sinks=[pacer.feed])
    outcome = await execution.finish(limit=600, grace=1)
    pacer.close()
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "chars": outcome.total_chars,
                "seconds": seconds,
                "kept": len(outcome.capture),
                "frames": frames,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def _child(megabytes: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--firehose-child", str(megabytes)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def bench_firehose(megabytes: int) -> dict[str, float]:
    started = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", firehose_command(megabytes) + " > /dev/null"], check=True)
    producer = time.perf_counter() - started
    baseline = _child(0)
    firehose = _child(megabytes)
    return {
        "megabytes": megabytes,
        "producer_alone_mb_s": round(megabytes / producer),
        "captured_mb_s": round(firehose["chars"] / 1e6 / firehose["seconds"]),
        "ratio_captured_over_producer_time": round(firehose["seconds"] / producer, 2),
        "kept_chars": int(firehose["kept"]),
        "live_frames": int(firehose["frames"]),
        "peak_rss_mb": round(firehose["peak_rss_mb"], 1),
        "baseline_peak_rss_mb": round(baseline["peak_rss_mb"], 1),
        "ratio_peak_rss_over_baseline": round(firehose["peak_rss_mb"] / baseline["peak_rss_mb"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=50)
    parser.add_argument("--firehose-mb", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=2.0, help="analysis run time")
    parser.add_argument("--firehose-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.firehose_child is not None:
        asyncio.run(firehose_child(args.firehose_child))
        return
    work = Path(tempfile.mkdtemp(prefix="corral-bench-"))
    try:
        report: dict[str, dict[str, Any]] = {
            "analysis": bench_analysis(args.seconds),
            "spawn": asyncio.run(bench_spawn(args.spawns, work)),
            "firehose": bench_firehose(args.firehose_mb),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    spawn, firehose = report["spawn"], report["firehose"]
    finish(
        "shell",
        [
            Figure(
                name="sandboxed true",
                value=spawn["sandboxed_true_ms"],
                unit="ms",
                baseline=spawn["bare_true_ms"],
            ),
            Figure(
                name=f"firehose {args.firehose_mb} MB captured",
                value=firehose["captured_mb_s"],
                unit="MB/s",
                baseline=firehose["producer_alone_mb_s"],
            ),
            Figure(
                name="firehose peak RSS",
                value=firehose["peak_rss_mb"],
                unit="MB",
                baseline=firehose["baseline_peak_rss_mb"],
            ),
        ],
    )


if __name__ == "__main__":
    main()
