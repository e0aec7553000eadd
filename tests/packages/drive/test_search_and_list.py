"""fs_search with both engines (ripgrep and pure Python) and fs_list: same answers, bounds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from corral.packages.drive.globs import Glob
from corral.packages.drive.search import Query, search
from corral.packages.drive.service import Drive
from corral.platform import Platform
from tests.packages.drive.conftest import call

RG = shutil.which("rg")
ENGINES = [
    pytest.param(RG, id="ripgrep", marks=pytest.mark.skipif(RG is None, reason="no rg")),
    pytest.param(None, id="python"),
]


@pytest.fixture
def tree(drive: Path) -> Path:
    (drive / "src" / "pkg").mkdir(parents=True)
    (drive / "src" / "main.py").write_text("import os\ndef main():\n    return TODO_one\n")
    (drive / "src" / "pkg" / "util.py").write_text("# TODO_two\nx = 1\n# todo_three\n")
    (drive / "src" / "pkg" / "notes.md").write_text("TODO_md\n")
    (drive / "src" / ".hidden.py").write_text("TODO_hidden\n")
    (drive / "src" / "blob.bin").write_bytes(b"TODO_bin\x00\x01")
    return drive


def use(platform: Platform, engine: str | None) -> None:
    platform.services.require(Drive).rg = engine


@pytest.mark.parametrize("engine", ENGINES)
async def test_matches_come_back_as_uri_line_text_sorted(
    platform: Platform, tree: Path, engine: str | None
) -> None:
    use(platform, engine)
    found = await call(platform, "fs_search", pattern=r"TODO_\w+")
    assert found.status == "ok", found.text
    assert found.text.splitlines() == [
        "3 matching lines in 3 files under data://",
        "data://src/main.py:3:     return TODO_one",
        "data://src/pkg/notes.md:1: TODO_md",
        "data://src/pkg/util.py:1: # TODO_two",
    ]
    assert "TODO_hidden" not in found.text and "TODO_bin" not in found.text
    assert found.data is not None
    assert found.data["engine"] == ("ripgrep" if engine else "python")


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_case_hidden_literal_and_a_single_file(
    platform: Platform, tree: Path, engine: str | None
) -> None:
    use(platform, engine)
    by_name = await call(platform, "fs_search", pattern="TODO", glob="*.py")
    assert [line.split(":")[1] for line in by_name.text.splitlines()[1:]] == [
        "//src/main.py",
        "//src/pkg/util.py",
    ]
    negated = await call(platform, "fs_search", pattern="TODO", glob="!*.py")
    assert negated.text.splitlines()[1:] == ["data://src/pkg/notes.md:1: TODO_md"]
    by_path = await call(platform, "fs_search", pattern="TODO", glob="src/pkg/**")
    assert "main.py" not in by_path.text and "notes.md" in by_path.text
    folded = await call(platform, "fs_search", pattern="todo_", ignore_case=True, glob="util.py")
    assert "2 matching lines" in folded.text
    hidden = await call(platform, "fs_search", pattern="TODO_hidden", hidden=True)
    assert "data://src/.hidden.py:1: TODO_hidden" in hidden.text
    literal = await call(platform, "fs_search", pattern="x = 1", fixed_strings=True)
    assert "data://src/pkg/util.py:2: x = 1" in literal.text
    one = await call(platform, "fs_search", pattern="import", uri="data://src/main.py")
    assert one.text.splitlines()[1:] == ["data://src/main.py:1: import os"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_the_count_is_bounded_and_says_so(
    platform: Platform, drive: Path, engine: str | None
) -> None:
    use(platform, engine)
    (drive / "many.txt").write_text("hit\n" * 500)
    found = await call(platform, "fs_search", pattern="hit", max_results=7)
    assert found.text.startswith("7 matching lines in 1 files")
    assert "stopped at max_results=7; there are more matches" in found.text


async def test_a_bad_pattern_is_a_clear_error(platform: Platform, tree: Path) -> None:
    found = await call(platform, "fs_search", pattern="(unclosed")
    assert found.error_code == "invalid_arguments" and "fixed_strings" in found.text


@pytest.mark.skipif(RG is None, reason="no rg")
async def test_a_pattern_ripgrep_cannot_take_falls_back_to_python(
    platform: Platform, tree: Path
) -> None:
    use(platform, RG)
    found = await call(platform, "fs_search", pattern=r"TODO_(?=one)")
    assert found.status == "ok", found.text
    assert found.data is not None and found.data["engine"] == "python"
    assert "data://src/main.py:3:" in found.text


@pytest.mark.skipif(RG is None, reason="no rg")
async def test_both_engines_agree_on_a_bigger_tree(platform: Platform, drive: Path) -> None:
    for index in range(300):
        folder = drive / f"d{index % 7}" / f"e{index % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}.txt").write_text(f"line\nneedle {index}\n" + "x\n" * (index % 5))
    caller = await platform.caller()
    sources = (await platform.runtime.kernel.config.dispatch_state()).sources
    query = Query(pattern=r"needle \d*7\b", max_results=1000)
    fast = await search(drive, query, caller=caller, sources=sources, rg=RG)
    slow = await search(drive, query, caller=caller, sources=sources, rg=None)
    assert (fast.engine, slow.engine) == ("ripgrep", "python")
    assert fast.hits == slow.hits and len(fast.hits) == 30


def test_globs_match_names_paths_and_alternatives() -> None:
    assert Glob.of("*.py").matches("a/b/c.py") and not Glob.of("*.py").matches("c.pyc")
    assert Glob.of("src/**/*.ts").matches("src/a/b.ts") and Glob.of("src/**/*.ts").matches(
        "src/b.ts"
    )
    assert not Glob.of("src/*.ts").matches("src/a/b.ts")
    assert Glob.of("*.{md,txt}").matches("x.txt") and not Glob.of("*.{md,txt}").matches("x.rst")
    assert Glob.of("[!a]*").matches("b") and not Glob.of("[!a]*").matches("a")
    assert Glob.of("!*.md").matches("a/b.py") and not Glob.of("!*.md").matches("a/b.md")


# -- fs_list ------------------------------------------------------------------------------------


async def test_a_listing_has_kinds_sizes_depth_and_patterns(platform: Platform, tree: Path) -> None:
    top = await call(platform, "fs_list")
    assert top.text.splitlines()[0] == "data:// — 1 entries"
    assert top.text.splitlines()[1].startswith("dir ") and top.text.endswith("src/")
    deep = await call(platform, "fs_list", uri="data://src", depth=2)
    names = [line.rsplit("  ", 1)[1] for line in deep.text.splitlines()[1:]]
    assert names == ["pkg/", "blob.bin", "main.py", "pkg/notes.md", "pkg/util.py"]
    sized = next(line for line in deep.text.splitlines() if line.endswith("main.py"))
    assert sized.startswith("file") and " 42 bytes " in sized
    only = await call(platform, "fs_list", uri="data://src", depth=5, pattern="*.py")
    assert [line.rsplit("  ", 1)[1] for line in only.text.splitlines()[1:]] == [
        "main.py",
        "pkg/util.py",
    ]
    hidden = await call(platform, "fs_list", uri="data://src", hidden=True)
    assert ".hidden.py" in hidden.text


async def test_newest_first_and_the_limit(platform: Platform, drive: Path) -> None:
    for index, name in enumerate(["old.txt", "new.txt", "mid.txt"]):
        (drive / name).write_text(name)
        stamp = {"old.txt": 1_000, "mid.txt": 2_000, "new.txt": 3_000}[name] + index
        os.utime(drive / name, (stamp, stamp))
    newest = await call(platform, "fs_list", sort="newest")
    assert [line.rsplit("  ", 1)[1] for line in newest.text.splitlines()[1:]] == [
        "new.txt",
        "mid.txt",
        "old.txt",
    ]
    cut = await call(platform, "fs_list", limit=2)
    assert cut.text.splitlines()[-1] == "[1 more entries not shown (limit 2)]"
    not_folder = await call(platform, "fs_list", uri="data://old.txt")
    assert not_folder.error_code == "not_a_folder"
