"""The watched source: after the first scan, a snapshot looks again only at what inotify
reported, and nothing a call does can slip past it.

Each evasion is a real program changing a real tree between a keeper's snapshot and its
change set; the change set must name the path and restoring it must give the tree back byte
for byte (the same check as without a watch). A missed change would be a silent data loss on
rewind.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.platform import Platform
from corral.shell.checkpoints import restore
from corral.shell.checkpoints.keeper import CallCheckpoint, CheckpointKeeper
from corral.shell.checkpoints.rewind import find_conflicts
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap, shells
from tests.shell.test_checkpoints import describe, make_tree, run

FILL_QUICKLY = (
    "import os, sys\n"
    "os.makedirs('fresh/a/b')\n"
    "for i in range(200):\n"
    "    open(f'fresh/a/b/f{i}.txt', 'w').write(str(i))\n"
    "os.makedirs('fresh/c')\n"
    "os.symlink('../a', 'fresh/c/up')\n"
)
MMAP_WRITE = (
    "import mmap, os\n"
    "fd = os.open('notes.md', os.O_RDWR)\n"
    "st = os.fstat(fd)\n"
    "m = mmap.mmap(fd, 0)\n"
    "os.close(fd)\n"
    "m[0:5] = b'MAPPD'\n"
    "m.close()\n"
    "os.utime('notes.md', ns=(st.st_atime_ns, st.st_mtime_ns))\n"
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    make_tree(root)
    return root


@pytest.fixture
def keeper(tmp_path: Path) -> Iterator[CheckpointKeeper]:
    (tmp_path / "data").mkdir()
    kept = CheckpointKeeper(tmp_path / "data")
    yield kept
    kept.close()


async def one_call(keeper: CheckpointKeeper, root: Path, *argv: str) -> CallCheckpoint:
    """A snapshot, ``argv`` run in ``root``, the change set (kept)."""
    snapshots = await keeper.before([root])
    try:
        run(root, *argv)
        return await keeper.after(snapshots, None)
    finally:
        keeper.release(snapshots)


def rewound(keeper: CheckpointKeeper, root: Path, *calls: CallCheckpoint) -> None:
    checkpoints = [c.sources[str(root)] for c in calls if c.sources]
    assert restore(root, keeper.blobs, checkpoints) == []


async def test_after_the_first_scan_a_snapshot_looks_only_at_what_moved(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    first = await keeper.before([tree])
    keeper.release(first)
    again = await keeper.before([tree])
    keeper.release(again)
    # No event since: nothing scanned, nothing copied (each call gets its own snapshot
    # object over the same tables).
    assert again[0].entries is first[0].entries and again[0].digests is first[0].digests
    source = keeper._sources[tree]
    (tree / "docs" / "guide.txt").write_text("changed by hand\n")
    _, touched = source.watch.refresh(first[0].entries)
    assert touched == {"docs/guide.txt"}


async def test_a_rename_across_folders_and_a_moved_folder_are_caught(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    before = describe(tree)
    await one_call(keeper, tree, "true")  # the watch is in place from here on
    moved = await one_call(keeper, tree, "mv", "src/pkg/util.py", "docs/util.py")
    assert set(moved.sources[str(tree)].priors) == {"src/pkg/util.py", "docs/util.py"}
    folder = await one_call(keeper, tree, "mv", "src/pkg", "docs/pkg")
    assert set(folder.sources[str(tree)].priors) == {
        "src/pkg",
        "src/pkg/main.py",
        "docs/pkg",
        "docs/pkg/main.py",
    }
    after_folder = await one_call(keeper, tree, "sed", "-i", "s/alpha/omega/", "docs/pkg/main.py")
    assert set(after_folder.sources[str(tree)].priors) == {"docs/pkg/main.py"}
    rewound(keeper, tree, moved, folder, after_folder)
    assert describe(tree) == before


async def test_a_new_folder_filled_quickly_is_caught_whole(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    before = describe(tree)
    await one_call(keeper, tree, "true")
    filled = await one_call(keeper, tree, sys.executable, "-c", FILL_QUICKLY)
    priors = filled.sources[str(tree)].priors
    assert len(priors) == 205 and "fresh/a/b/f199.txt" in priors and "fresh/c/up" in priors
    later = await one_call(keeper, tree, "sh", "-c", "echo more >> fresh/a/b/f7.txt")
    assert set(later.sources[str(tree)].priors) == {"fresh/a/b/f7.txt"}
    rewound(keeper, tree, filled, later)
    assert describe(tree) == before


async def test_a_hard_linked_file_changed_through_its_name_outside_the_source(
    tmp_path: Path, tree: Path, keeper: CheckpointKeeper
) -> None:
    outside = tmp_path / "elsewhere.md"
    os.link(tree / "notes.md", outside)
    start = describe(tree)
    await one_call(keeper, tree, "true")
    during = await one_call(keeper, tree, "sh", "-c", f"echo via-outside >> {outside}")
    assert set(during.sources[str(tree)].priors) == {"notes.md"}
    # Between calls, a person changes it through the other name; the next call's prior
    # must be the person's version, not the one the last snapshot held.
    outside.write_text("the person's version\n")
    by_person = describe(tree)
    call = await one_call(keeper, tree, "sed", "-i", "s/person/agent/", "notes.md")
    assert set(call.sources[str(tree)].priors) == {"notes.md"}
    rewound(keeper, tree, call)
    assert describe(tree) == by_person
    rewound(keeper, tree, during)
    assert describe(tree) == start


async def test_content_changed_with_the_mtime_set_back_or_through_a_mapping(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    before = describe(tree)
    await one_call(keeper, tree, "true")
    info = (tree / "src" / "pkg" / "util.py").stat()
    stamp = f"@{info.st_mtime_ns // 1_000_000_000}.{info.st_mtime_ns % 1_000_000_000:09d}"
    touched = await one_call(
        keeper,
        tree,
        "sh",
        "-c",
        f"sed -i s/return/RETURN/ src/pkg/util.py && touch -d {stamp} src/pkg/util.py",
    )
    assert (tree / "src" / "pkg" / "util.py").stat().st_mtime_ns == info.st_mtime_ns
    assert set(touched.sources[str(tree)].priors) == {"src/pkg/util.py"}
    mapped = await one_call(keeper, tree, sys.executable, "-c", MMAP_WRITE)
    assert (tree / "notes.md").read_bytes().startswith(b"MAPPD")
    assert set(mapped.sources[str(tree)].priors) == {"notes.md"}
    rewound(keeper, tree, touched, mapped)
    assert describe(tree) == before


async def test_two_calls_on_one_source_overlap_each_with_its_own_window(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    before_calls = describe(tree)
    first = await keeper.before([tree], call_id="first", conversation_id="c1")
    run(tree, "sh", "-c", "echo one >> notes.md")
    # The second call starts while the first is open: no turn to wait for.
    second = await asyncio.wait_for(keeper.before([tree], call_id="second"), timeout=10)
    run(tree, "sh", "-c", "echo two >> docs/guide.txt")
    later = await keeper.after(second, "second")
    keeper.release(second)
    run(tree, "sh", "-c", "echo three >> run.sh")
    kept = await keeper.after(first, "first")
    keeper.release(first)
    # The first call's window holds all it was open for; the second's only what moved
    # while it was open: notes.md was changed before it started, run.sh after it ended.
    assert set(kept.sources[str(tree)].priors) == {"notes.md", "docs/guide.txt", "run.sh"}
    assert set(later.sources[str(tree)].priors) == {"docs/guide.txt"}
    # Each prior is the state at its own call's start.
    one = kept.sources[str(tree)].priors["notes.md"]
    assert one is not None and one.size == len("first notes\n")
    assert keeper.overlaps.read("first") == {str(tree): {"second": ""}}
    assert keeper.overlaps.read("second") == {str(tree): {"first": "c1"}}
    assert keeper.open_calls() == set()
    rewound(keeper, tree, kept)
    assert describe(tree) == before_calls


async def test_clean_up_spares_what_an_open_calls_snapshot_needs(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    before_calls = describe(tree)
    first = await keeper.before([tree], call_id="first")
    run(tree, "sh", "-c", "echo changed > notes.md")
    # A later call's snapshot moves the source's last state on: the old notes.md is now
    # named only by the first call's snapshot, which no change set names yet.
    second = await keeper.before([tree], call_id="second")
    keeper.release(second)
    keeper.collect(unused_for=0)
    kept = await keeper.after(first, "first")
    keeper.release(first)
    assert set(kept.sources[str(tree)].priors) == {"notes.md"}
    rewound(keeper, tree, kept)
    assert describe(tree) == before_calls


@needs_bwrap
async def test_writes_by_the_sandbox_uid_inside_bubblewrap_are_caught(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    root = drive.resolve()  # noqa: ASYNC240 (a test's own folder)
    make_tree(drive)
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    before = describe(drive)
    keeper = shells(platform).checkpoints
    ids = []
    for command in (
        "echo one >> notes.md",
        "sed -i s/alpha/beta/ src/pkg/main.py && mkdir -p new/deep && echo x > new/deep/y",
        "mv docs/guide.txt src/guide.txt && chmod 700 run.sh",
    ):
        result = await platform.call_tool("execute", {"command": command, "cwd": str(drive)})
        assert result.data is not None, result.text
        ids.append(result.data["checkpoint"]["id"])
    kept = [keeper.load(call_id) for call_id in ids]
    changed = [set(k.sources[str(root)].priors) for k in kept if k is not None]
    assert changed == [
        {"notes.md"},
        {"src/pkg/main.py", "new", "new/deep", "new/deep/y"},
        {"docs/guide.txt", "src/guide.txt", "run.sh"},
    ]
    assert keeper._sources[root].watched
    checkpoints = [k.sources[str(root)] for k in kept if k is not None]
    assert restore(root, keeper.blobs, checkpoints) == []
    assert describe(drive) == before


@needs_bwrap
async def test_a_background_shell_is_covered_from_its_start_to_its_end(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    root = drive.resolve()  # noqa: ASYNC240 (a test's own folder)
    make_tree(drive)
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    before = describe(drive)
    command = (
        "echo early >> notes.md && rm -r docs && "
        "mkdir late && echo late > late/file.txt && chmod 700 run.sh"
    )
    result = await platform.call_tool(
        "execute",
        {"command": command, "cwd": str(drive), "background": True},
        conversation_id="conv-bg",
    )
    assert result.data is not None, result.text
    service = shells(platform)
    record = await service.background.wait_ended(result.data["shell_id"], 30)
    assert record.exit_code == 0
    await service.settle_checkpoints()
    keeper = service.checkpoints
    assert keeper.rows is not None
    (row,) = await keeper.rows.for_conversation("conv-bg")
    kept = keeper.load(row.call_id)
    assert kept is not None
    assert set(kept.sources[str(root)].priors) == {
        "notes.md",
        "docs",
        "docs/guide.txt",
        "late",
        "late/file.txt",
        "run.sh",
    }
    assert restore(root, keeper.blobs, [kept.sources[str(root)]]) == []
    assert describe(drive) == before


FLOOD = (
    "import os\n"
    "for i in range(9000):\n"  # two distinct events per touch, not merged: past the queue
    "    os.utime('notes.md' if i % 2 else 'run.sh')\n"
    "open('docs/guide.txt', 'a').write('after the flood')\n"
)


def queue_limit() -> int:
    return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())


async def test_a_queue_overflow_falls_back_to_a_whole_scan(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    limit = queue_limit()
    if limit > 16384:
        pytest.skip(f"the queue holds {limit} events here; the flood is sized for 16384")
    before = describe(tree)
    await one_call(keeper, tree, "true")
    flooded = await one_call(keeper, tree, sys.executable, "-c", FLOOD)
    assert set(flooded.sources[str(tree)].priors) == {"notes.md", "run.sh", "docs/guide.txt"}
    rewound(keeper, tree, flooded)
    assert describe(tree) == before


async def test_a_step_overlapped_by_a_call_still_running_conflicts_on_all_its_paths(
    tree: Path, keeper: CheckpointKeeper
) -> None:
    running = await keeper.before([tree], call_id="running", conversation_id="theirs")
    mine = await keeper.before([tree], call_id="mine", conversation_id="ours")
    run(tree, "sh", "-c", "echo mine >> notes.md && echo also > new.txt")
    kept = await keeper.after(mine, "mine")
    keeper.release(mine)
    reason = "changed while call running (conversation theirs) also ran on this source"
    found = find_conflicts(keeper, "ours", [kept])
    assert [(c.path, c.reason) for c in found] == [
        ("new.txt", reason + ", still running"),
        ("notes.md", reason + ", still running"),
    ]
    theirs = await keeper.after(running, "running")
    keeper.release(running)
    # Ended: only the paths both change sets hold (here all of them: the running call's
    # window saw the same writes).
    assert set(theirs.sources[str(tree)].priors) == {"notes.md", "new.txt"}
    assert [(c.path, c.reason) for c in find_conflicts(keeper, "ours", [kept])] == [
        ("new.txt", reason),
        ("notes.md", reason),
    ]
    assert find_conflicts(keeper, "ours", [kept, theirs]) == []
