"""corral.files: the platform's writes below a root never follow a link, never write into a
pipe, a device or a hard-linked file, and never keep setuid or setgid.

Each test is an evasion tried against the write path; the race test runs a real swapper
process against the platform's writes.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from corral.errors import PolicyDenied, ToolError
from corral.files import (
    append_file,
    make_private_folder,
    open_for_append,
    write_file,
    write_text_atomically,
)
from tests.swapping import SWAPPER

RUN_PARTS = (".corral", "conversations", "c_1", "runs", "r_1")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "drive"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def everything_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("level", range(len(RUN_PARTS)))
@pytest.mark.parametrize("how", ["write", "append"])
def test_a_link_at_any_level_of_a_run_path_refuses_the_write(
    root: Path, outside: Path, level: int, how: str
) -> None:
    above = root.joinpath(*RUN_PARTS[:level])
    above.mkdir(parents=True, exist_ok=True)
    (above / RUN_PARTS[level]).symlink_to(outside)
    target = root.joinpath(*RUN_PARTS, "meta.json")
    with pytest.raises(PolicyDenied) as refused:
        if how == "write":
            write_text_atomically(root, target, "{}")
        else:
            append_file(root, target, b"{}\n")
    planted = str(above / RUN_PARTS[level])
    assert refused.value.data == {"path": planted, "rule": "link"}
    assert "symbolic link" in refused.value.message and planted in refused.value.message
    assert everything_in(outside) == []


def test_a_link_as_the_final_component_is_refused_and_its_target_untouched(
    root: Path, outside: Path
) -> None:
    (outside / "passwd").write_text("root:x:0:0\n")
    (root / "notes.txt").symlink_to(outside / "passwd")
    for write in (
        lambda: write_file(root, root / "notes.txt", b"owned\n"),
        lambda: append_file(root, root / "notes.txt", b"owned\n"),
    ):
        with pytest.raises(PolicyDenied, match="symbolic link"):
            write()
    assert (outside / "passwd").read_text() == "root:x:0:0\n"
    assert (root / "notes.txt").is_symlink()
    assert [p.name for p in root.iterdir()] == ["notes.txt"]  # no temp file left behind


def test_a_hard_link_to_a_file_outside_is_replaced_never_written_through(
    root: Path, outside: Path
) -> None:
    (outside / "shadow").write_text("secret\n")
    os.link(outside / "shadow", root / "shadow")
    write_file(root, root / "shadow", b"agent text\n")
    assert (outside / "shadow").read_text() == "secret\n"
    assert (root / "shadow").read_text() == "agent text\n"
    os.unlink(root / "shadow")
    os.link(outside / "shadow", root / "shadow")
    with pytest.raises(ToolError, match="hard link") as refused:
        append_file(root, root / "shadow", b"more\n")
    assert refused.value.code == "not_a_file"
    assert (outside / "shadow").read_text() == "secret\n"


def test_a_pipe_in_place_of_the_target_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "meta.json")
    os.mkfifo(root / "messages.jsonl")
    outcome: list[BaseException] = []

    def attempt() -> None:
        for write in (
            lambda: write_text_atomically(root, root / "meta.json", "{}"),
            lambda: append_file(root, root / "messages.jsonl", b"{}\n"),
        ):
            try:
                write()
            except ToolError as err:
                outcome.append(err)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "a write blocked on a named pipe"
    assert [getattr(e, "code", None) for e in outcome] == ["not_a_file", "not_a_file"]
    assert "named pipe" in str(outcome[0])
    assert stat.S_ISFIFO((root / "meta.json").lstat().st_mode)


def test_a_device_in_place_of_the_target_is_refused(root: Path) -> None:
    os.mknod(root / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(ToolError, match="a device") as refused:
        write_file(root, root / "null", b"x")
    assert refused.value.code == "not_a_file"
    with pytest.raises(ToolError, match="a device"):
        append_file(root, root / "null", b"x")


@pytest.mark.parametrize(
    "path",
    ["notes/../../outside/x", "../outside/x", "notes/.."],
)
def test_dot_parts_and_paths_outside_the_root_are_refused(
    root: Path, outside: Path, path: str
) -> None:
    (root / "notes").mkdir()
    with pytest.raises(PolicyDenied) as refused:
        write_file(root, Path(path), b"x")
    assert refused.value.data["rule"] == "dot_part"
    with pytest.raises(PolicyDenied) as elsewhere:
        write_file(root, outside / "x", b"x")
    assert elsewhere.value.data["rule"] == "outside_root"
    assert everything_in(outside) == []


def test_a_replaced_file_keeps_its_bits_but_never_setuid_or_setgid(root: Path) -> None:
    tool = root / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    os.chmod(tool, 0o6755)
    write_file(root, tool, b"#!/bin/sh\necho agent\n")
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755
    os.chmod(tool, 0o2640)
    write_file(root, tool, b"again\n")
    assert stat.S_IMODE(tool.stat().st_mode) == 0o640
    write_file(root, tool, b"explicit\n", mode=0o4700)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving an owner needs root")
def test_as_root_new_entries_take_the_owner_of_their_folder(root: Path) -> None:
    os.chown(root, 65534, 65534)
    write_file(root, root / "made" / "deep" / "file.txt", b"x\n")
    append_file(root, root / "made" / "log.jsonl", b"{}\n")
    for made in ("made", "made/deep", "made/deep/file.txt", "made/log.jsonl"):
        found = (root / made).stat()
        assert (found.st_uid, found.st_gid) == (65534, 65534), made
    # A file the platform replaces takes the folder's owner, not the old file's.
    os.chown(root / "made" / "deep" / "file.txt", 0, 0)
    os.chmod(root / "made" / "deep" / "file.txt", 0o4755)
    write_file(root, root / "made" / "deep" / "file.txt", b"y\n")
    found = (root / "made" / "deep" / "file.txt").stat()
    assert (found.st_uid, found.st_gid, stat.S_IMODE(found.st_mode)) == (65534, 65534, 0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving an owner needs root")
def test_the_private_folder_belongs_to_the_platform_even_in_a_folder_of_another_user(
    root: Path, outside: Path
) -> None:
    os.chown(root, 65534, 65534)
    (root / ".corral").mkdir(mode=0o777)
    os.chown(root / ".corral", 65534, 65534)
    make_private_folder(root, root / ".corral")
    found = (root / ".corral").stat()
    assert (found.st_uid, stat.S_IMODE(found.st_mode)) == (os.geteuid(), 0o700)
    os.rmdir(root / ".corral")
    (root / ".corral").symlink_to(outside)
    before = outside.stat()
    with pytest.raises(PolicyDenied, match="symbolic link"):
        make_private_folder(root, root / ".corral")
    after = outside.stat()
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)


def test_a_link_swapped_in_while_the_platform_writes_never_lets_a_write_out(
    root: Path, outside: Path, tmp_path: Path
) -> None:
    run = root.joinpath(*RUN_PARTS)
    stop = tmp_path / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(run), str(outside), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        written = refused = 0
        for round_number in range(3000):
            try:
                if round_number % 2:
                    write_text_atomically(root, run / "meta.json", "{}")
                else:
                    append_file(root, run / "messages.jsonl", b"{}\n")
                written += 1
            except ToolError:  # PolicyDenied included: a link or a move met, said clearly
                refused += 1
    finally:
        stop.touch()
        swapper.wait(timeout=30)
        assert swapper.stdout is not None
        swapper.stdout.close()
    assert everything_in(outside) == []
    # Both outcomes happened, so the swapper really raced the writes.
    assert written > 0 and refused > 0, (written, refused)


def test_an_append_handle_stays_on_the_file_it_opened(root: Path, outside: Path) -> None:
    with open_for_append(root, root / "logs" / "shell.jsonl") as log:
        (root / "logs").rename(root / "logs.old")
        (root / "logs").symlink_to(outside)
        log.write(b"row\n")
    assert everything_in(outside) == []
    assert (root / "logs.old" / "shell.jsonl").read_bytes() == b"row\n"
