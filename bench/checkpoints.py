"""What a checkpoint adds to a writing call, measured to choose its mechanism.

    .venv/bin/python bench/checkpoints.py [--sizes 1,100,1000,10000] [--calls 15] [--runs 3]
        [--profile] [--compare]

A writing call is a sandboxed ``sh`` (bubblewrap, seccomp, the runner's capture) appending
to 10 files of a source holding N files of 1 KB (for N < 10 it creates the missing ones).
It is timed alone and with ``watched`` around it: what the platform does, through the same
code (:func:`corral.shell.checkpoints.around.around`, then ``keep``): the keeper's snapshot
(the source is watched with inotify, so it is the last one reused when no event came), the
call, the change set (only the paths events named; the changed files' content kept then),
its row in a conversation (a SQLite file, as the platform's default store) and retention.
The first snapshot is taken before timing. The row is written behind the call (the keeper
queues it): that write is timed apart, after each call ("row behind"), and added to the
call's CPU in "added in all".

Each figure is taken both as wall time and as the CPU time of this process (all its
threads: ``time.process_time``), which is steadier than wall time on a loaded machine and is
what the platform's own process pays; the sandboxed command's CPU is not in it.

``--profile`` adds where the checkpoint's time goes, phase by phase (wall, median per
call). ``--compare`` adds the mechanisms measured to choose this one:

- ``cas``: :func:`take_snapshot` before (the source's lstat scan; blobs copied only for
  files moved since the previous snapshot) and :func:`changes` after: the steady state.
- ``cas overlapped``: the same, the snapshot taken while bubblewrap sets the sandbox up
  (bubblewrap's ``--block-fd`` holds the command until it is done). Measured on this
  machine (2 busy cores): no gain over ``cas``, so the platform does not do it.
- ``cas first``: the first snapshot of a source, which copies every file into the store.
- ``hard links``: every file hard-linked into a fresh folder before, a scan after. Shown for
  its cost only: a file written in place keeps its inode, so the link sees the new content
  and the prior one is lost; it cannot be a checkpoint on its own.
- ``scan``: one scan of the source alone, without the call (a checkpoint takes two).
- ``overlay``: bubblewrap's ``--overlay-src`` is tried; bubblewrap older than 0.9 lacks it
  and the figure is then left out (the reason is printed).

Each run times ``--calls`` calls per mechanism, alone and watched alternating, and keeps the
median; the table shows the min and median of the run medians, and the disk a checkpoint
adds (what the keeper's folder grew by). Target: under 10% added wall time for 1,000 files
with 10 changed, for ``watched`` (median of the run medians).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import inspect
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corral.shell.checkpoints import BlobStore, Snapshot, changes, scan, take_snapshot
from corral.shell.checkpoints.around import around
from corral.shell.checkpoints.keeper import CheckpointKeeper
from corral.shell.checkpoints.rows import CallScope, CheckpointRows
from corral.shell.confinement import check_bubblewrap
from corral.shell.runner import Execution, ProcessSpec
from corral.shell.sandbox import BoundSource, SandboxFiles, bwrap_argv, plan_mounts
from corral.shell.seccomp import build_filter
from corral.store import make_engine, make_sessionmaker
from corral.store.shell_tables import CheckpointRecord
from outcome import EXIT_SKIPPED, Figure, finish

CHANGED = 10
SANDBOX_UID = 65534
PER_FOLDER = 100
APPEND = "for i in 0 1 2 3 4 5 6 7 8 9; do echo changed >> d0/f$i.txt; done"
LIVE = {
    "checkpoints": True,
    "checkpoint_max_files": 20_000,
    "checkpoint_keep_count": 100,
    "checkpoint_keep_days": 30,
}
"""The live settings the platform would hold, checkpoints on (defaults otherwise)."""
SCOPE = CallScope(conversation_id="bench", user_id="bench", tool="execute")
PHASES = {
    "_snapshot": "snapshot (thread)",
    "before": "before (with hop)",
    "_changes": "change set (thread)",
    "after": "after (with hops)",
    "keep": "keep",
    "_record": "change set written",
    "_insert": "row insert (behind)",
    "prune": "retention",
}
"""Methods of the keeper and its rows timed by ``--profile``, when the keeper has them."""


def make_source(root: Path, files: int) -> None:
    for index in range(files):
        folder = root / f"d{index // PER_FOLDER}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index % PER_FOLDER}.txt").write_bytes(os.urandom(512).hex().encode())


def spec(files: SandboxFiles, binary: str, source: Path, data: Path) -> ProcessSpec:
    mounts = plan_mounts(
        files,
        [BoundSource(name="src", root=str(source), writable=True)],
        data_dir=str(data),
        protected=(),
        network=False,
    )
    argv = bwrap_argv(
        binary,
        mounts,
        network=False,
        cwd=str(source),
        argv=["/bin/sh", "-c", APPEND],
        uid=SANDBOX_UID,
    )
    return ProcessSpec(
        argv=argv,
        env={"PATH": "/usr/bin:/bin"},
        cwd=str(source),
        sandboxed=True,
        seccomp=build_filter(),
        run_as=SANDBOX_UID if os.geteuid() == 0 else None,
    )


async def watched_call(process: ProcessSpec, keeper: CheckpointKeeper, source: Path) -> int:
    """The call as the platform makes it with checkpoints on (see ``ShellService.run``):
    snapshots around it, the change set kept with its row; returns the files changed."""
    async with around(keeper, [source], LIVE) as checkpointing:
        await call(process)
        kept = await checkpointing.keep(uuid.uuid4().hex, SCOPE, LIVE)
    assert kept is not None, checkpointing.unkept
    return int(str(kept["files_changed"]))


async def call(process: ProcessSpec) -> None:
    execution = await Execution.start(process, capture_limit=200_000)
    outcome = await execution.finish(limit=30, grace=1)
    if outcome.exit_code != 0:
        raise SystemExit(f"the writing call failed: {outcome.capture.text()}")


class StartGate:
    """One pipe: bubblewrap blocks on its read end until :meth:`release`."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_inheritable(self._read, False)

    def hold(self, spec: ProcessSpec) -> ProcessSpec:
        """``spec`` (a bubblewrap argv) held until :meth:`release`."""
        argv = [spec.argv[0], "--block-fd", str(self._read), *spec.argv[1:]]
        return dataclasses.replace(spec, argv=argv, pass_fds=(*spec.pass_fds, self._read))

    def spawned(self) -> None:
        """The child holds its copy of the read end; the platform's is closed."""
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def release(self) -> None:
        """Let the command run (or, with the process gone, just close the pipe)."""
        self.spawned()
        if self._write >= 0:
            with contextlib.suppress(BrokenPipeError):
                os.write(self._write, b"go")
            os.close(self._write)
            self._write = -1


async def overlapped(
    process: ProcessSpec, source: Path, blobs: BlobStore, previous: Snapshot
) -> Snapshot:
    """The call with its snapshot taken while bubblewrap sets the sandbox up."""
    gate = StartGate()
    try:
        execution = await Execution.start(gate.hold(process), capture_limit=200_000)
        gate.spawned()
        snapshot = take_snapshot(source, blobs, previous)  # bubblewrap starts meanwhile
    finally:
        gate.release()
    outcome = await execution.finish(limit=30, grace=1)
    if outcome.exit_code != 0:
        raise SystemExit(f"the writing call failed: {outcome.capture.text()}")
    return snapshot


Timings = dict[str, list[float]]


def timed(action: Callable[[], None], wall: list[float], cpu: list[float]) -> None:
    """Run ``action``; its wall time and this process's CPU time, in ms."""
    started, spent = time.perf_counter(), time.process_time()
    action()
    cpu.append((time.process_time() - spent) * 1000)
    wall.append((time.perf_counter() - started) * 1000)


def instrument(owner: object, name: str, sink: Timings) -> None:
    """Time each call of ``owner.name`` (sync or async) into ``sink[PHASES[name]]``."""
    method = getattr(owner, name)
    phase = PHASES[name]
    sink.setdefault(phase, [])

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def waited(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                sink[phase].append((time.perf_counter() - started) * 1000)

        setattr(owner, name, waited)
        return

    @functools.wraps(method)
    def ran(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            sink[phase].append((time.perf_counter() - started) * 1000)

    setattr(owner, name, ran)


def _disk(folder: Path) -> int:
    """Bytes of the files below ``folder``."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file())


def hard_link_farm(source: Path, farm: Path) -> None:
    shutil.rmtree(farm, ignore_errors=True)
    for path, entry in scan(source).items():
        target = farm / path
        if entry.kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "file":
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source / path, target)


def overlay_works(binary: str, work: Path) -> str:
    """Empty when bubblewrap mounts an overlay here, else why not."""
    lower, upper, scratch = work / "ov-lower", work / "ov-upper", work / "ov-work"
    for folder in (lower, upper, scratch):
        folder.mkdir(exist_ok=True)
    argv = [binary, "--ro-bind", "/", "/", "--overlay-src", str(lower)]
    argv += ["--overlay", str(upper), str(scratch), "/mnt", "true"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return "" if done.returncode == 0 else done.stderr.strip() or f"exit {done.returncode}"


async def open_rows(database: Path) -> tuple[CheckpointRows, Callable[[], Any]]:
    """Checkpoint rows in a fresh SQLite file, as the platform's default store keeps them;
    with the coroutine function that closes it."""
    engine = make_engine(f"sqlite+aiosqlite:///{database}")
    async with engine.begin() as connection:
        await connection.run_sync(
            CheckpointRecord.metadata.create_all, [CheckpointRecord.__table__]
        )
    return CheckpointRows(make_sessionmaker(engine)), engine.dispose


def measure(
    size: int, calls: int, files: SandboxFiles, binary: str, work: Path, options: argparse.Namespace
) -> dict[str, Any]:
    # The call alone writes its own copy of the source: its writes must not reach the
    # watched one, where they would be a person's edits between two calls.
    source, alone, data = work / f"source-{size}", work / f"alone-{size}", work / "data"
    for tree in (source, alone):
        make_source(tree, size)
        if os.geteuid() == 0:  # as root, commands run as the sandbox uid, which owns it
            for path in (tree, *tree.rglob("*")):
                os.chown(path, SANDBOX_UID, SANDBOX_UID)
    process = spec(files, binary, source, data)
    process_alone = spec(files, binary, alone, data)
    # One event loop for every call, as in the platform: a loop (and its thread pool) per
    # call would add its own start-up to each figure.
    loop = asyncio.new_event_loop()
    run_alone = lambda: loop.run_until_complete(call(process_alone))  # noqa: E731
    (data / "keeper").mkdir(parents=True)
    rows, close_rows = loop.run_until_complete(open_rows(data / "corral.db"))
    keeper = CheckpointKeeper(data / "keeper", rows)
    # The files were written a moment ago, inside the window where their times cannot be
    # trusted: the first snapshots compare them by content. Then the steady state.
    for _ in range(2):
        loop.run_until_complete(watched_call(process, keeper, source))
    wall: Timings = {"none": [], "watched": [], "behind": []}
    cpu: Timings = {"none": [], "watched": [], "behind": []}
    phases: Timings = {}
    if options.profile:
        for name in PHASES:
            owner = rows if name == "_insert" else keeper
            if hasattr(owner, name):
                instrument(owner, name, phases)
    watched_disk: list[int] = []

    def with_watch() -> None:
        changed = loop.run_until_complete(watched_call(process, keeper, source))
        assert changed == CHANGED, changed

    # Baseline and checkpoint alternate so that a change in the machine's load hits both.
    for _ in range(calls):
        timed(run_alone, wall["none"], cpu["none"])
        held = _disk(keeper.folder)
        timed(with_watch, wall["watched"], cpu["watched"])
        # the row is written behind the call: timed on its own, so that neither the next
        # call nor the baseline pays it
        timed(lambda: loop.run_until_complete(keeper.flush()), wall["behind"], cpu["behind"])
        watched_disk.append(_disk(keeper.folder) - held)
    result: dict[str, Any] = {
        "wall": {name: statistics.median(values) for name, values in wall.items()},
        "cpu": {name: statistics.median(values) for name, values in cpu.items()},
        "phases": {name: statistics.median(values) for name, values in phases.items() if values},
        "watched disk": statistics.median(watched_disk),
    }
    keeper.close()
    loop.run_until_complete(close_rows())
    if options.compare:
        result["wall"].update(compare(size, calls, process, loop, source, data, work))
    loop.close()
    shutil.rmtree(source)
    shutil.rmtree(alone)
    shutil.rmtree(data, ignore_errors=True)
    return result


def compare(
    size: int,
    calls: int,
    process: ProcessSpec,
    loop: asyncio.AbstractEventLoop,
    source: Path,
    data: Path,
    work: Path,
) -> dict[str, float]:
    """The other mechanisms' wall times (``--compare``), median of ``calls``."""
    run_call = lambda: loop.run_until_complete(call(process))  # noqa: E731
    blobs = BlobStore(data / f"blobs-{size}")
    snapshot = take_snapshot(source, blobs)
    run_call()
    snapshot = take_snapshot(source, blobs, previous=snapshot)
    names = ("cas", "cas overlapped", "cas first", "hard links", "scan")
    wall: Timings = {name: [] for name in names}
    unused: list[float] = []

    def with_cas() -> None:
        nonlocal snapshot
        snapshot = take_snapshot(source, blobs, previous=snapshot)
        run_call()
        checkpoint = changes(snapshot)
        assert checkpoint.files_changed == CHANGED, checkpoint

    def with_overlap() -> None:
        nonlocal snapshot
        snapshot = loop.run_until_complete(overlapped(process, source, blobs, snapshot))
        checkpoint = changes(snapshot)
        assert checkpoint.files_changed == CHANGED, checkpoint

    def with_first() -> None:
        first = take_snapshot(source, BlobStore(data / "first"))
        run_call()
        changes(first)

    def with_links() -> None:
        hard_link_farm(source, work / "farm")
        run_call()
        scan(source)

    for _ in range(calls):
        timed(with_cas, wall["cas"], unused)
        timed(with_overlap, wall["cas overlapped"], unused)
        timed(with_first, wall["cas first"], unused)
        timed(lambda: scan(source), wall["scan"], unused)
        shutil.rmtree(data / "first")
    # Last: a hard link moves the ctime of every file, which sends the next snapshot back
    # to copying them all.
    for _ in range(calls):
        timed(with_links, wall["hard links"], unused)
    return {name: statistics.median(values) for name, values in wall.items()}


def spread(values: list[float]) -> str:
    return f"min {min(values):8.2f}  median {statistics.median(values):8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,100,1000,10000")
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="time each phase")
    parser.add_argument("--compare", action="store_true", help="also the other mechanisms")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="corral-bench-checkpoints-"))
    work.chmod(0o711)
    try:
        files = SandboxFiles.write(work / "etc", uid=SANDBOX_UID)
        status, binary = asyncio.run(check_bubblewrap("bwrap", files, uid=SANDBOX_UID))
        if not status.works or binary is None:
            print("bubblewrap cannot run here; the writing call is sandboxed")
            raise SystemExit(EXIT_SKIPPED)
        overlay = overlay_works(binary, work) if args.compare else ""
        runs = [
            {size: measure(size, args.calls, files, binary, work, args) for size in sizes}
            for _ in range(args.runs)
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if overlay:
        print(f"overlay left out: bubblewrap here cannot mount one ({overlay})")
    print(
        f"{args.runs} runs of {args.calls} calls; per size, min and median of the run medians (ms)"
    )
    figures: list[Figure] = []
    for size in sizes:
        figures += report(size, [run[size] for run in runs], args)
    finish("checkpoints", figures)


def report(size: int, runs: list[dict[str, Any]], args: argparse.Namespace) -> list[Figure]:
    """Print one size's figures; its figures for the table."""
    wall = {name: [run["wall"][name] for run in runs] for name in runs[0]["wall"]}
    cpu = {name: [run["cpu"][name] for run in runs] for name in ("none", "watched", "behind")}
    added_wall = [w - n for w, n in zip(wall["watched"], wall["none"], strict=True)]
    added_cpu = [w - n for w, n in zip(cpu["watched"], cpu["none"], strict=True)]
    base, with_ = statistics.median(wall["none"]), statistics.median(wall["watched"])
    base_cpu, with_cpu = statistics.median(cpu["none"]), statistics.median(cpu["watched"])
    print(f"{size} files, {CHANGED} changed")
    print(f"  wall  call alone     {spread(wall['none'])}")
    print(f"  wall  with checkpoint {spread(wall['watched'])}")
    print(f"  wall  added          {spread(added_wall)}   {100 * (with_ / base - 1):+.1f}%")
    print(f"  cpu   call alone     {spread(cpu['none'])}")
    print(f"  cpu   with checkpoint {spread(cpu['watched'])}")
    share = 100 * (with_cpu - base_cpu) / base
    print(f"  cpu   added          {spread(added_cpu)}   {share:+.1f}% of the call's wall")
    print(f"  wall  row behind     {spread(wall['behind'])}   (after the call returned)")
    print(f"  cpu   row behind     {spread(cpu['behind'])}")
    total = [a + b for a, b in zip(added_cpu, cpu["behind"], strict=True)]
    print(f"  cpu   added in all   {spread(total)}   (the call's and the row's behind it)")
    if args.profile:
        for phase in runs[0]["phases"]:
            values = [run["phases"][phase] for run in runs if phase in run["phases"]]
            print(f"    {phase:<22} {spread(values)}")
    for name in ("cas", "cas overlapped", "cas first", "hard links", "scan"):
        if name in wall:
            print(f"  wall  {name:<16} {spread(wall[name])}")
    target = size == 1000
    return [
        Figure(
            name=f"watched, {size} files (wall)",
            value=with_,
            unit="ms",
            baseline=base,
            target="< 1.10x" if target else "",
            met=with_ < base * 1.10 if target else None,
        ),
        Figure(
            name=f"watched, {size} files (cpu of the process)",
            value=with_cpu,
            unit="ms",
            baseline=base_cpu,
        ),
        Figure(
            name=f"disk per watched checkpoint, {size} files",
            value=statistics.median(run["watched disk"] for run in runs),
            unit="bytes",
        ),
    ]


if __name__ == "__main__":
    main()
