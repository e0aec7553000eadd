"""A change set costs the paths that moved, not the source: the next snapshot's tables share
the previous one's (never walking or copying it whole), and the previous snapshot stays as
it was."""

from __future__ import annotations

import time
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from pathlib import Path
from typing import NoReturn, TypeVar

from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import Snapshot, advance, diff
from corral.shell.checkpoints.layered import MIN_OVERLAY, Layered
from corral.shell.checkpoints.watch import SourceWatch

V = TypeVar("V")


class Unwalkable(dict[str, V]):
    """A table that may be looked up but not walked: walking it is what grew with the
    source."""

    def _walked(self) -> NoReturn:
        raise AssertionError("the whole table was walked")

    def __iter__(self) -> Iterator[str]:
        self._walked()

    def keys(self) -> KeysView[str]:
        self._walked()

    def items(self) -> ItemsView[str, V]:
        self._walked()

    def values(self) -> ValuesView[V]:
        self._walked()


def test_a_layered_table_is_a_value_each_version_of_which_reads_as_a_dict() -> None:
    first = Layered({"a": 1, "b": 2})
    second = first.changed({"b": None, "c": 3})
    third = second.changed({"b": 4, "a": None})
    assert dict(first) == {"a": 1, "b": 2} and len(first) == 2
    assert dict(second) == {"a": 1, "c": 3} and len(second) == 2
    assert dict(third) == {"b": 4, "c": 3} and len(third) == 2
    assert "b" not in second and second.get("b") is None and second.get("b", 9) == 9
    assert "a" in second and second["a"] == 1 and "a" not in third
    assert second.changed({}) is second and second.changed({"zz": None}) == second
    # many changes fold into a new base; the versions before are untouched
    many = third.changed({f"p{i}": i for i in range(MIN_OVERLAY + 1)})
    assert len(many) == MIN_OVERLAY + 3 and many["p7"] == 7 and many["c"] == 3
    assert dict(many.changed({"p7": None})) == {k: v for k, v in many.items() if k != "p7"}
    assert dict(third) == {"b": 4, "c": 3}


def test_a_refresh_and_the_snapshot_after_it_cost_only_the_paths_that_moved(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    for i in range(300):
        folder = tree / f"d{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    blobs = BlobStore(tmp_path / "blobs")
    watch = SourceWatch(tree)
    try:
        scanned = watch.scan()
        first = advance(tree, blobs, None, scanned, None, time.time_ns())
        entries, digests = dict(first.entries), dict(first.digests)
        before = Snapshot(
            root=tree,
            entries=Unwalkable(entries),
            digests=Unwalkable(digests),
            taken_ns=first.taken_ns,
        )
        (tree / "d0" / "f1.txt").write_text("changed, longer than before\n")
        (tree / "d1" / "f150.txt").unlink()
        (tree / "d2" / "new.txt").write_text("new\n")
        after, touched = watch.refresh(before.entries)
        assert touched == {"d0/f1.txt", "d1/f150.txt", "d2/new.txt"}
        found = diff(before, after, touched)
        assert set(found.priors) == touched and found.priors["d2/new.txt"] is None
        now = advance(tree, blobs, before, after, touched, time.time_ns())
    finally:
        watch.close()
        blobs.close()
    assert len(now.entries) == 303 and len(now.digests) == 300  # folders have no digest
    assert "d1/f150.txt" not in now.entries and "d1/f150.txt" not in now.digests
    assert now.digests["d0/f1.txt"] != digests["d0/f1.txt"]
    assert now.digests["d0/f2.txt"] == digests["d0/f2.txt"]
    # the snapshot before is a value: nothing of it changed
    assert dict.__len__(before.entries) == len(entries) == 303
    assert all(before.entries[path] == entry for path, entry in entries.items())
    assert all(before.digests[path] == digest for path, digest in digests.items())
