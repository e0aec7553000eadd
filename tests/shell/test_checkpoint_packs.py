"""Packed blobs: small contents share one pack file per process, a new process reads them
back through the index, and clean-up forgets and compacts without losing a kept content."""

from __future__ import annotations

import os
from pathlib import Path

from corral.shell.checkpoints import BlobStore, changes, restore, take_snapshot
from tests.shell.test_checkpoints import describe, make_tree, run


def test_small_contents_share_a_pack_and_restore_from_a_new_process(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    make_tree(tree)
    big = os.urandom(3 << 20)
    (tree / "big.bin").write_bytes(big)
    before = describe(tree)
    blobs = BlobStore(tmp_path / "blobs")
    snapshot = take_snapshot(tree, blobs)
    packs = list(blobs.packs.glob("*.pack"))
    assert len(packs) == 1  # every small file of the tree in one file
    assert blobs.path(snapshot.digests["big.bin"]).is_file()  # a large one has its own
    run(tree, "sh", "-c", "echo x > notes.md && rm -r src && rm big.bin && chmod 000 secret.txt")
    checkpoint = changes(snapshot)
    blobs.close()
    # a crash while appending leaves a torn last line: it names nothing
    with open(blobs.packs / "index", "a", encoding="ascii") as index:
        index.write("abc123 torn")
    again = BlobStore(tmp_path / "blobs")  # as the CLI's own process would open it
    assert restore(tree, again, [checkpoint]) == []
    assert describe(tree) == before


def test_clean_up_forgets_unneeded_contents_and_compacts_a_mostly_unneeded_pack(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    make_tree(tree)
    blobs = BlobStore(tmp_path / "blobs")
    snapshot = take_snapshot(tree, blobs)
    old_pack = next(blobs.packs.glob("*.pack"))
    blobs.close()  # the next content goes to a new pack
    keep = snapshot.digests["notes.md"]
    run(tree, "sh", "-c", "echo 'new notes' > notes.md")
    newer = take_snapshot(tree, blobs, previous=snapshot)
    assert newer.digests["notes.md"] in blobs.known()
    referenced = {keep, newer.digests["notes.md"]}
    assert blobs.collect(referenced, unused_for=3600) == 0  # all used a moment ago
    removed = blobs.collect(referenced, unused_for=0)
    assert removed == len(set(snapshot.digests.values())) - 1
    assert blobs.known() == referenced
    assert not old_pack.exists()  # most of it was unneeded: its kept content moved
    reopened = BlobStore(tmp_path / "blobs")
    assert reopened.known() == referenced
    read, write = os.pipe()
    reopened.copy_out(keep, write)
    os.close(write)
    assert os.read(read, 1000) == b"first notes\n"
    os.close(read)
