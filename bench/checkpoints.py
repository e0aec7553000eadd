"""What a checkpoint adds to a writing call, measured to choose its mechanism.

    .venv/bin/python bench/checkpoints.py [--sizes 1,100,1000,10000] [--calls 5] [--runs 3]

A writing call is a sandboxed ``sh`` (bubblewrap, seccomp, the runner's capture) appending
to 10 files of a source holding N files of 1 KB (for N < 10 it creates the missing ones).
It is timed alone and with each mechanism around it:

- ``watched``: what the platform does (:class:`CheckpointKeeper`): the source is watched
  with inotify, so the snapshot before the call is the last one reused when no event came,
  and the look after it visits only the paths events named; the changed files' content is
  kept then. The first snapshot is taken before timing.
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

Each run times ``--calls`` calls per mechanism and keeps the median; the table shows the
min and median of the run medians, and the disk a steady-state checkpoint adds (new blobs
plus its JSON; for ``watched``, what the keeper's folder grew by). Target: under 10% added
for 1,000 files with 10 changed, for ``watched``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from corral.shell.checkpoints import BlobStore, Snapshot, changes, scan, take_snapshot
from corral.shell.checkpoints.keeper import CheckpointKeeper
from corral.shell.confinement import check_bubblewrap
from corral.shell.runner import Execution, ProcessSpec
from corral.shell.sandbox import BoundSource, SandboxFiles, bwrap_argv, plan_mounts
from corral.shell.seccomp import build_filter
from outcome import EXIT_SKIPPED, Figure, finish

CHANGED = 10
SANDBOX_UID = 65534
PER_FOLDER = 100
APPEND = "for i in 0 1 2 3 4 5 6 7 8 9; do echo changed >> d0/f$i.txt; done"


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
    """The call as the platform makes it with checkpoints on: the keeper's snapshot (a
    watched source), the call, the change set kept; returns the files changed."""
    snapshots = await keeper.before([source])
    try:
        await call(process)
        kept = await keeper.after(snapshots, None)
    finally:
        keeper.release(snapshots)
    return kept.files_changed


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


def timed(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


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


def measure(
    size: int, calls: int, files: SandboxFiles, binary: str, work: Path
) -> dict[str, float]:
    source, data = work / f"source-{size}", work / "data"
    make_source(source, size)
    if os.geteuid() == 0:  # as root, commands run as the sandbox uid, which owns the source
        for path in (source, *source.rglob("*")):
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
    process = spec(files, binary, source, data)
    # One event loop for every call, as in the platform: a loop (and its thread pool) per
    # call would add its own start-up to each figure.
    loop = asyncio.new_event_loop()
    run_call = lambda: loop.run_until_complete(call(process))  # noqa: E731
    blobs = BlobStore(data / f"blobs-{size}")
    snapshot = take_snapshot(source, blobs)
    # The files were written a moment ago, inside the window where their times cannot be
    # trusted: the first snapshot compares them by content; this one reuses its blobs.
    run_call()
    snapshot = take_snapshot(source, blobs, previous=snapshot)
    keeper = CheckpointKeeper(data / f"keeper-{size}")
    (data / f"keeper-{size}").mkdir(parents=True)
    loop.run_until_complete(watched_call(process, keeper, source))  # the first copies all
    times: dict[str, list[float]] = {
        "none": [],
        "watched": [],
        "cas": [],
        "cas overlapped": [],
        "cas first": [],
        "hard links": [],
        "scan": [],
    }
    disk: list[int] = []
    watched_disk: list[int] = []

    def with_watch() -> None:
        changed = loop.run_until_complete(watched_call(process, keeper, source))
        assert changed == CHANGED, changed

    def with_cas() -> None:
        nonlocal snapshot
        snapshot = take_snapshot(source, blobs, previous=snapshot)
        run_call()
        checkpoint = changes(snapshot)
        assert checkpoint.files_changed == CHANGED, checkpoint
        disk.append(len(json.dumps(checkpoint.to_json())))

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

    # Baseline and mechanisms alternate so that a change in the machine's load hits both.
    for _ in range(calls):
        times["none"].append(timed(run_call))
        held = _disk(keeper.folder)
        times["watched"].append(timed(with_watch))
        watched_disk.append(_disk(keeper.folder) - held)
        held = blobs.size()
        times["cas"].append(timed(with_cas))
        disk[-1] += blobs.size() - held
        times["cas overlapped"].append(timed(with_overlap))
        times["cas first"].append(timed(with_first))
        times["scan"].append(timed(lambda: scan(source)))
        shutil.rmtree(data / "first")
    # Last: a hard link moves the ctime of every file, which sends the next snapshot back
    # to copying them all.
    for _ in range(calls):
        times["hard links"].append(timed(with_links))
    result = {name: statistics.median(values) for name, values in times.items()}
    result["disk"] = statistics.median(disk)
    result["watched disk"] = statistics.median(watched_disk)
    keeper.close()
    loop.close()
    shutil.rmtree(source)
    shutil.rmtree(data, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,100,1000,10000")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
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
        overlay = overlay_works(binary, work)
        runs = [
            {size: measure(size, args.calls, files, binary, work) for size in sizes}
            for _ in range(args.runs)
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if overlay:
        print(f"overlay left out: bubblewrap here cannot mount one ({overlay})")
    figures: list[Figure] = []
    for size in sizes:
        base = [run[size]["none"] for run in runs]
        low, middle = min(base), statistics.median(base)
        print(f"{size} files: call alone min {low:.2f} ms, median {middle:.2f} ms")
        for name in ("watched", "cas", "cas overlapped", "cas first", "hard links", "scan"):
            values = [run[size][name] for run in runs]
            print(f"  {name}: min {min(values):.2f} ms, median {statistics.median(values):.2f} ms")
            target = size == 1000 and name == "watched"
            value, baseline = statistics.median(values), statistics.median(base)
            figures.append(
                Figure(
                    name=f"{name}, {size} files",
                    value=value,
                    unit="ms",
                    baseline=baseline,
                    target="< 1.10x" if target else "",
                    met=value < baseline * 1.10 if target else None,
                )
            )
        figures.append(
            Figure(
                name=f"disk per watched checkpoint, {size} files",
                value=statistics.median(run[size]["watched disk"] for run in runs),
                unit="bytes",
            )
        )
        figures.append(
            Figure(
                name=f"disk per checkpoint, {size} files",
                value=statistics.median(run[size]["disk"] for run in runs),
                unit="bytes",
            )
        )
    finish("checkpoints", figures)


if __name__ == "__main__":
    main()
