"""Change sets in one append-only log: a call adds a line, not a file; another process
reads them back; forgotten ones are compacted away without losing an append; a torn line
is skipped; and change sets kept the old way (a JSON file each) are still rewound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corral.shell.checkpoints import change_log
from corral.shell.checkpoints.capture import changes, take_snapshot
from corral.shell.checkpoints.change_log import ChangeLog
from corral.shell.checkpoints.keeper import CheckpointKeeper
from corral.shell.checkpoints.restore import restore
from tests.shell.test_checkpoints import describe, make_tree, run

WRITER = """
import sys
from pathlib import Path
from corral.shell.checkpoints.change_log import ChangeLog
log = ChangeLog(Path(sys.argv[1]))
name = sys.argv[2]
for index in range(300):
    log.append(f"{name}-{index}", {"sources": {}, "pad": "x" * 2000})
    if index % 3:
        log.forget([f"{name}-{index}"])
"""


async def test_a_change_set_is_a_line_of_the_log_and_rewinds_from_a_new_process(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    make_tree(tree)
    before = describe(tree)
    keeper = CheckpointKeeper(tmp_path / "data")
    snapshot = take_snapshot(tree, keeper.blobs)
    run(tree, "sh", "-c", "sed -i s/aaa/bbb/ src/pkg/main.py && rm -r docs && chmod 600 run.sh")
    kept = await keeper.keep({str(tree): changes(snapshot)}, "call-1")
    assert kept.files_changed == 4  # main.py, docs, docs/guide.txt, run.sh
    calls = keeper.folder / "calls"
    assert [p.name for p in calls.iterdir()] == ["log"]  # no file per change set
    keeper.close()
    again = CheckpointKeeper(tmp_path / "data")  # as the CLI's own process would open it
    loaded = again.load("call-1")
    assert loaded is not None
    assert loaded.sources == kept.sources and loaded.after == kept.after
    assert restore(tree, again.blobs, [loaded.sources[str(tree)]]) == []
    assert describe(tree) == before
    assert again.load("call-2") is None


async def test_a_change_set_kept_the_old_way_is_still_rewound_spared_and_forgotten(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    make_tree(tree)
    before = describe(tree)
    keeper = CheckpointKeeper(tmp_path / "data")
    snapshot = take_snapshot(tree, keeper.blobs)
    run(tree, "sh", "-c", "echo replaced > notes.md && rm src/pkg/util.py")
    found = changes(snapshot)
    # as the keeper wrote it before the log: <calls>/<id>.json
    (keeper.folder / "calls").mkdir()
    document = {
        "call_id": "old-1",
        "sources": {str(tree): found.to_json()},
        "after": {str(tree): {"notes.md": None, "src/pkg/util.py": None}},
    }
    (keeper.folder / "calls" / "old-1.json").write_text(json.dumps(document))
    await keeper.keep({str(tree): found}, "new-1")  # the log and old files side by side
    loaded = keeper.load("old-1")
    assert loaded is not None and loaded.sources[str(tree)] == found
    # clean-up spares what only the old file names
    digest = found.priors["notes.md"]
    assert digest is not None and digest.digest
    keeper.close()
    fresh = CheckpointKeeper(tmp_path / "data")  # no snapshot in memory
    await fresh.drop(["new-1"])
    fresh.collect(unused_for=0)
    assert fresh.blobs.has(digest.digest)
    assert restore(tree, fresh.blobs, [loaded.sources[str(tree)]]) == []
    assert describe(tree) == before
    await fresh.drop(["old-1"])
    assert fresh.load("old-1") is None and fresh.load("new-1") is None
    assert not (fresh.folder / "calls" / "old-1.json").exists()
    fresh.collect(unused_for=0)
    assert not fresh.blobs.has(digest.digest)


def test_forgotten_change_sets_are_compacted_away_and_no_append_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_log, "COMPACT_FROM", 0)
    folder = tmp_path / "calls"
    first, second = ChangeLog(folder), ChangeLog(folder)  # two processes' views
    for index in range(6):
        first.append(f"c{index}", {"sources": {}, "n": index})
    first.forget(["c0", "c1", "c2", "c3"])
    second.append("late", {"sources": {}, "n": 99})  # holds the log open for appends
    assert first.get("c4") == {"sources": {}, "n": 4} and first.get("c0") is None
    size = folder.joinpath("log").stat().st_size
    assert first.compact()
    assert folder.joinpath("log").stat().st_size < size / 2
    # the other process's descriptor is on the replaced file: its append goes to the new one
    second.append("after", {"sources": {}, "n": 100})
    for view in (first, second, ChangeLog(folder)):
        assert [view.get(f"c{i}") for i in range(4)] == [None] * 4
        assert view.get("c5") == {"sources": {}, "n": 5}
        assert view.get("late") == {"sources": {}, "n": 99}
        assert view.get("after") == {"sources": {}, "n": 100}
        assert sorted(d["n"] for d in view.documents()) == [4, 5, 99, 100]
    assert not first.compact()  # nothing forgotten since
    first.close()
    second.close()


def test_a_line_torn_by_a_crash_is_skipped_and_the_next_append_is_whole(tmp_path: Path) -> None:
    folder = tmp_path / "calls"
    log = ChangeLog(folder)
    log.append("kept", {"sources": {}, "n": 1})
    log.close()
    with open(folder / "log", "ab") as out:
        out.write(b'torn {"sources": {"/a": {"x"')  # the process died mid-write
    again = ChangeLog(folder)
    assert again.get("torn") is None
    again.append("next", {"sources": {}, "n": 2})
    assert ChangeLog(folder).get("next") == {"sources": {}, "n": 2}
    assert ChangeLog(folder).get("kept") == {"sources": {}, "n": 1}
    assert [d["n"] for d in ChangeLog(folder).documents()] == [1, 2]
    again.close()


def test_appends_from_other_processes_survive_compactions_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_log, "COMPACT_FROM", 0)
    folder = tmp_path / "calls"
    compactor = ChangeLog(folder)
    compactor.append("first", {"sources": {}})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(folder), name], env=env)
        for name in ("a", "b")
    ]
    compacted = 0
    while any(writer.poll() is None for writer in writers):
        compacted += compactor.compact()
    assert [writer.returncode for writer in writers] == [0, 0]
    assert compacted >= 2  # some while both wrote
    fresh = ChangeLog(folder)
    for name in ("a", "b"):
        for index in range(300):
            kept = fresh.get(f"{name}-{index}")
            assert (kept is None) == bool(index % 3), (name, index)
    assert fresh.get("first") == {"sources": {}}
    compactor.close()
