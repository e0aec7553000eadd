"""Checkpoints on a real tree: real commands change it, restoring gives it back byte for byte.

Each test builds a tree in its own temporary folder, runs real programs in it (coreutils,
sed, a Python script), and compares the restored tree with a description taken before:
every path's kind, mode, content and link target.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from corral.shell.checkpoints import (
    BlobStore,
    Checkpoint,
    Snapshot,
    changes,
    restore,
    take_snapshot,
)

Described = dict[str, tuple[str, int, bytes, int, int]]

MANY_FILES_SCRIPT = (
    "import os\n"
    "os.makedirs('gen/deep', exist_ok=True)\n"
    "for i in range(300):\n"
    "    open(f'gen/deep/f{i}.txt', 'w').write(str(i) * 50)\n"
    "open('notes.md', 'w').write('rewritten by a script')\n"
)


def describe(root: Path) -> Described:
    """Every path below ``root``: kind, permission bits, content or link target, owner."""
    found: Described = {}
    for folder, names, files in os.walk(root):
        for name in names + files:
            path = Path(folder) / name
            info = path.lstat()
            rel = path.relative_to(root).as_posix()
            owner = (info.st_uid, info.st_gid)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", 0, os.readlink(path).encode(), *owner)
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", stat.S_IMODE(info.st_mode), b"", *owner)
            elif info.st_mode & stat.S_IRUSR:
                found[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes(), *owner)
            else:  # a chmod moves the ctime: only where needed (rewind takes it as a change)
                path.chmod(info.st_mode | stat.S_IRUSR)
                found[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes(), *owner)
                path.chmod(stat.S_IMODE(info.st_mode))
    return found


def make_tree(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "pkg" / "main.py").write_text("print('alpha')\nvalue = 'aaa'\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 1\n")
    (root / "docs" / "guide.txt").write_text("a guide\n" * 20)
    (root / "notes.md").write_text("first notes\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    (root / "secret.txt").write_text("private")
    (root / "secret.txt").chmod(0o600)
    (root / "latest").symlink_to("notes.md")
    (root / "dangling").symlink_to("nowhere/at/all")


def run(root: Path, *argv: str) -> None:
    subprocess.run(list(argv), cwd=root, check=True, capture_output=True)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "source"
    root.mkdir()
    make_tree(root)
    return root


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "data" / "checkpoints" / "blobs")


CALLS: dict[str, list[list[str]]] = {
    "sed -i": [["sed", "-i", "s/aaa/bbb/", "src/pkg/main.py"]],
    "rm -r": [["rm", "-r", "src"]],
    "mv": [["mv", "notes.md", "docs/moved.md"], ["mv", "docs", "documentation"]],
    "chmod": [["chmod", "000", "secret.txt"], ["chmod", "644", "run.sh"], ["chmod", "500", "docs"]],
    "ln -s": [["ln", "-s", "src/pkg", "pkglink"], ["ln", "-sfn", "run.sh", "latest"]],
    "append in place": [["sh", "-c", "echo more >> notes.md"]],
    "file becomes folder": [["sh", "-c", "rm notes.md && mkdir notes.md && echo x > notes.md/in"]],
    "folder becomes link": [["sh", "-c", "rm -r docs && ln -s src docs"]],
    "script writes many files": [[sys.executable, "-c", MANY_FILES_SCRIPT]],
}


@pytest.mark.parametrize("name", list(CALLS))
def test_restoring_one_call_gives_the_tree_back_byte_for_byte(
    name: str, tree: Path, blobs: BlobStore
) -> None:
    before = describe(tree)
    snapshot = take_snapshot(tree, blobs)
    for argv in CALLS[name]:
        run(tree, *argv)
    assert describe(tree) != before
    checkpoint = changes(snapshot)
    assert checkpoint.files_changed > 0
    assert restore(tree, blobs, [checkpoint]) == []
    assert describe(tree) == before


def test_the_checkpoint_names_exactly_what_the_call_changed(tree: Path, blobs: BlobStore) -> None:
    snapshot = take_snapshot(tree, blobs)
    run(tree, "sed", "-i", "s/aaa/bbb/", "src/pkg/main.py")
    run(tree, "mv", "notes.md", "notes2.md")
    run(tree, "chmod", "700", "run.sh")
    checkpoint = changes(snapshot)
    assert set(checkpoint.priors) == {"src/pkg/main.py", "notes.md", "notes2.md", "run.sh"}
    assert checkpoint.priors["notes2.md"] is None
    moved = checkpoint.priors["notes.md"]
    assert moved is not None and moved.kind == "file" and moved.size == len("first notes\n")
    mode = checkpoint.priors["run.sh"]
    assert mode is not None and mode.mode == 0o755


def test_a_read_only_call_makes_an_empty_checkpoint(tree: Path, blobs: BlobStore) -> None:
    snapshot = take_snapshot(tree, blobs)
    run(tree, "ls", "-laR")
    run(tree, "cat", "notes.md", "src/pkg/main.py")
    assert changes(snapshot).priors == {}


def test_rewinding_to_the_middle_of_a_run_restores_the_middle(tree: Path, blobs: BlobStore) -> None:
    states = [describe(tree)]
    checkpoints: list[Checkpoint] = []
    snapshot: Snapshot | None = None
    steps = [
        ["sed", "-i", "s/alpha/beta/", "src/pkg/main.py"],
        ["rm", "-r", "docs"],
        [sys.executable, "-c", MANY_FILES_SCRIPT],
        ["sh", "-c", "echo tail >> src/pkg/main.py && chmod 600 src/pkg/util.py"],
    ]
    for argv in steps:
        snapshot = take_snapshot(tree, blobs, previous=snapshot)
        run(tree, *argv)
        checkpoints.append(changes(snapshot))
        states.append(describe(tree))
    assert restore(tree, blobs, checkpoints[2:]) == []
    assert describe(tree) == states[2]
    assert restore(tree, blobs, checkpoints[:2]) == []
    assert describe(tree) == states[0]


def test_a_later_snapshot_copies_only_what_moved(tree: Path, blobs: BlobStore) -> None:
    first = take_snapshot(tree, blobs)
    run(tree, "sed", "-i", "s/alpha/gamma/", "src/pkg/main.py")
    stored = blobs.known()
    second = take_snapshot(tree, blobs, previous=first)
    added = blobs.known() - stored
    assert len(added) == 1
    assert second.digests["src/pkg/main.py"] != first.digests["src/pkg/main.py"]
    assert second.digests["notes.md"] == first.digests["notes.md"]


def test_restoring_never_writes_through_a_link_the_call_planted(
    tree: Path, blobs: BlobStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "guide.txt").write_text("not the source's")
    before = describe(tree)
    snapshot = take_snapshot(tree, blobs)
    run(tree, "rm", "-r", "docs")
    run(tree, "ln", "-s", str(outside), "docs")
    assert restore(tree, blobs, [changes(snapshot)]) == []
    assert describe(tree) == before
    assert describe(outside)["guide.txt"][:3] == ("file", 0o644, b"not the source's")


def test_snapshots_and_checkpoints_survive_a_round_trip_through_json(
    tree: Path, blobs: BlobStore
) -> None:
    snapshot = take_snapshot(tree, blobs)
    run(tree, "rm", "notes.md")
    run(tree, "ln", "-s", "run.sh", "new-link")
    checkpoint = changes(Snapshot.from_json(snapshot.to_json()))
    again = Checkpoint.from_json(checkpoint.to_json())
    assert again == checkpoint
    assert restore(tree, blobs, [again]) == []
    assert "new-link" not in describe(tree)
    assert (tree / "notes.md").read_text() == "first notes\n"
