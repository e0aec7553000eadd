"""Protected paths resolved once per folder: the same answers as ``os.path.realpath``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.shell.real_paths import RealPaths
from corral.shell.sandbox import BoundSource, SandboxFiles, plan_mounts


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Folders, files and every kind of link a protected path could meet."""
    root = tmp_path / "a" / "b"
    (root / "data" / "drive" / ".corral").mkdir(parents=True)
    (root / "data" / "corral.db").write_text("db")
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "keys").write_text("k")
    (root / "data" / "linked.toml").symlink_to(root / "elsewhere" / "keys")
    (root / "data" / "linked-dir").symlink_to(root / "elsewhere")
    (root / "data" / "dangling").symlink_to(root / "nowhere")
    (root / "data" / "loop").symlink_to(root / "data" / "loop")
    (root / "via").symlink_to(root / "data")
    return root


def _cases(root: Path) -> list[str]:
    data = root / "data"
    names = ["corral.db", "missing", "drive", "linked.toml", "linked-dir", "dangling", "loop"]
    paths = [str(data / n) for n in names]
    paths += [str(root / "via" / "corral.db"), str(root / "via" / "drive" / ".corral")]
    paths += [str(data / "corral.db" / "under-a-file"), str(data / "loop" / "x")]
    paths += [f"{data}/../data/corral.db", f"{data}//corral.db", "data/corral.db", "/", str(data)]
    return paths


def test_every_kind_of_path_resolves_as_realpath_does(tree: Path) -> None:
    real = RealPaths()
    for raw in _cases(tree) * 2:  # the second round answers from remembered folders
        resolved = real(raw)
        assert resolved == os.path.realpath(raw), raw
        assert real.lexists(resolved) == os.path.lexists(resolved), raw
        assert real.isdir(resolved) == os.path.isdir(resolved), raw


def test_each_more_protected_path_costs_one_lstat(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a walk of every part of it again, as nine realpath calls per command did."""
    data = tree / "data"
    files = SandboxFiles(etc=str(tree), uid=65534, gid=65534)
    sources = [BoundSource(name="drive", root=str(data / "drive"), writable=True)]
    lstat = os.lstat
    calls: list[str] = []

    def counting(path: str, *args: object, **kwargs: object) -> os.stat_result:
        calls.append(path)
        return lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", counting)

    def planned(names: list[str]) -> int:
        calls.clear()
        protected = [str(data / n) for n in names]
        plan_mounts(files, sources, data_dir=str(data), protected=protected, network=False)
        return len(calls)

    few = planned(["drive/.corral", "corral.db"])
    more = [f"corral.db-{n}" for n in range(8)]
    assert planned(["drive/.corral", "corral.db", *more]) - few == len(more)
