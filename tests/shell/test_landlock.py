"""Landlock rules and the sandbox's prepared ``/etc``, judged as plans on real folders.

What the kernel does with them is probed in ``test_confinement``; here the plans
themselves: which paths get which rights, what is carved out, what one ``/etc`` holds.
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from corral.shell import confinement
from corral.shell.doctor import _advice, kernel_features
from corral.shell.landlock import READ, maskable, plan_landlock
from corral.shell.sandbox import BoundSource, SandboxFiles, plan_mounts
from corral.shell.system_etc import host_entries

EVERYTHING = (1 << 16) - 1


def _plan(tmp_path: Path, sources: list[tuple[str, bool]], *, abi: int = 6) -> dict[str, int]:
    data = tmp_path / "data"
    plan = plan_landlock(
        abi=abi,
        toolchain=["/usr"],
        home=str(tmp_path / "home"),
        sources=sources,
        data_dir=str(data),
        protected=[str(data / "private"), str(data / "corral.db")],
        network=False,
    )
    return {rule.path: rule.access for rule in plan.rules}


def _layout(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "drive" / "sub").mkdir(parents=True)
    (data / "private").mkdir()
    (data / "corral.db").write_text("")
    (tmp_path / "project").mkdir()
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "home").mkdir()
    return data


def test_a_source_covering_the_data_folder_is_carved_around_it(tmp_path: Path) -> None:
    data = _layout(tmp_path)
    rules = _plan(tmp_path, [(str(tmp_path), True), (str(data / "drive"), True)])
    # The covering root gets no rule (a rule would reach everything beneath it) ...
    assert str(tmp_path) not in rules and str(data) not in rules
    # ... its other children get the source's rights, the drive its own ...
    assert rules[str(tmp_path / "project")] == EVERYTHING
    assert rules[str(tmp_path / "notes.txt")] == EVERYTHING
    assert rules[str(data / "drive")] == EVERYTHING
    # ... and nothing reaches the database or the private folder.
    for path, _ in rules.items():
        assert not path.startswith((str(data / "private"), str(data / "corral.db"))), path


def test_a_source_inside_the_data_folder_keeps_its_protected_files_out(tmp_path: Path) -> None:
    data = _layout(tmp_path)
    rules = _plan(tmp_path, [(str(data), False)])
    assert str(data) not in rules
    assert rules[str(data / "drive")] == READ
    assert str(data / "private") not in rules and str(data / "corral.db") not in rules


def test_a_symlink_inside_a_carved_folder_gets_no_rule_of_its_own(tmp_path: Path) -> None:
    data = _layout(tmp_path)
    (tmp_path / "to-db").symlink_to(data / "corral.db")
    rules = _plan(tmp_path, [(str(tmp_path), False)])
    assert str(tmp_path / "to-db") not in rules


def test_ordinary_sources_toolchain_home_and_devices(tmp_path: Path) -> None:
    _layout(tmp_path)
    rules = _plan(tmp_path, [(str(tmp_path / "project"), False)])
    assert rules[str(tmp_path / "project")] == READ
    assert rules["/usr"] == READ and rules[str(tmp_path / "home")] == EVERYTHING
    assert "/dev/null" in rules and "/proc" in rules
    assert not any(path.startswith("/dev/sd") for path in rules)


def test_the_ruleset_attribute_matches_each_abi(tmp_path: Path) -> None:
    def attr(abi: int, network: bool) -> bytes:
        return plan_landlock(
            abi=abi,
            toolchain=[],
            home=str(tmp_path),
            sources=[],
            data_dir=str(tmp_path / "d"),
            protected=[],
            network=network,
        ).ruleset_attr()

    assert attr(1, False) == struct.pack("<Q", (1 << 13) - 1)
    assert attr(3, False) == struct.pack("<Q", (1 << 15) - 1)
    assert attr(4, False) == struct.pack("<QQ", (1 << 15) - 1, 0b11)  # TCP handled: refused
    assert attr(4, True) == struct.pack("<QQ", (1 << 15) - 1, 0)
    assert attr(6, False) == struct.pack("<QQQ", EVERYTHING, 0b11, 0b11)  # signals, sockets
    assert attr(7, True) == struct.pack("<QQQ", EVERYTHING, 0, 0b11)


def test_etc_is_one_bind_of_a_prepared_folder(tmp_path: Path) -> None:
    files = SandboxFiles.write(tmp_path / "sandbox", uid=65534)
    project = tmp_path / "project"
    project.mkdir()
    sources = [BoundSource(name="p", root=str(project), writable=True)]
    offline = plan_mounts(files, sources, data_dir=str(tmp_path / "d"), protected=(), network=False)
    etc = [m for m in offline if m.dest == "/etc" or m.dest.startswith("/etc/")]
    assert [(m.kind, m.dest, m.src) for m in etc] == [("ro", "/etc", files.etc)]
    online = plan_mounts(files, sources, data_dir=str(tmp_path / "d"), protected=(), network=True)
    extra = {m.dest for m in online} - {m.dest for m in offline}
    assert extra <= {"/etc/resolv.conf"}
    assert not any(m.kind == "dev_bind" and m.dest == "/dev/sda" for m in offline)
    passwd = (Path(files.etc) / "passwd").read_text()
    assert passwd.startswith("corral:x:65534:65534:") and "root:" not in passwd


def test_only_what_every_user_may_read_is_copied(tmp_path: Path) -> None:
    files = SandboxFiles.write(tmp_path / "sandbox", uid=65534)
    copied = Path(files.etc)
    for entry in host_entries():
        public = os.path.islink(entry) or os.stat(entry).st_mode & 0o004
        assert os.path.lexists(copied / os.path.basename(entry)) == bool(public), entry
    for folder, dirs, found in os.walk(copied):
        for name in [*dirs, *found]:
            info = os.lstat(os.path.join(folder, name))
            if not stat.S_ISLNK(info.st_mode):
                assert info.st_mode & 0o004, os.path.join(folder, name)
    assert not (copied / "ssl" / "private").exists()


def test_the_folder_is_copied_again_only_when_the_host_changed(tmp_path: Path) -> None:
    first = SandboxFiles.write(tmp_path / "sandbox", uid=65534)
    generation = os.path.realpath(first.etc)
    again = SandboxFiles.write(tmp_path / "sandbox", uid=65534)
    assert os.path.realpath(again.etc) == generation
    other = SandboxFiles.write(tmp_path / "sandbox", uid=1234)  # a new uid: new passwd
    assert os.path.realpath(other.etc) != generation and not os.path.exists(generation)
    assert "corral:x:1234:" in (Path(other.etc) / "passwd").read_text()


def test_a_masked_protected_path_leaves_the_folder_around_it_a_rule(tmp_path: Path) -> None:
    data = _layout(tmp_path)
    drive = data / "drive"
    (drive / ".corral").mkdir()

    def rules(protected: list[str]) -> dict[str, int]:
        plan = plan_landlock(
            abi=6,
            toolchain=[],
            home=str(tmp_path / "home"),
            sources=[(str(drive), True)],
            data_dir=str(data),
            protected=protected,
            network=False,
            masked=maskable(protected),
        )
        return {rule.path: rule.access for rule in plan.rules}

    assert rules([str(drive / ".corral")])[str(drive)] == EVERYTHING  # the drive root works
    # A protected path that does not exist cannot be masked, so it stays carved: a command
    # must not create it.
    assert maskable([str(drive / "missing")]) == []
    assert str(drive) not in rules([str(drive / ".corral"), str(drive / "missing")])
    (tmp_path / "link").symlink_to(drive / ".corral")
    assert maskable([str(tmp_path / "link")]) == [str(drive / ".corral")]


def test_the_doctor_names_what_landlock_without_root_leaves_open() -> None:
    features = replace(kernel_features(), root=False, landlock_abi=6)
    advice = " ".join(_advice(features, {"bubblewrap": False, "landlock": True}, None))
    assert "no PID or mount namespace" in advice and "command lines" in advice
    as_root = replace(features, root=True)
    advice = " ".join(_advice(as_root, {"bubblewrap": False, "landlock": True}, None))
    assert "no PID or mount namespace" not in advice


@pytest.mark.skipif(os.geteuid() != 0, reason="the namespaces need root")
def test_the_doctor_asks_for_unshare_when_root_lacks_it(monkeypatch: pytest.MonkeyPatch) -> None:
    features = replace(kernel_features(), root=True, landlock_abi=6)
    works = {"bubblewrap": False, "landlock": True}
    assert "unshare" not in " ".join(_advice(features, works, None))
    monkeypatch.setattr(confinement, "_UNSHARE", None)
    assert "Install util-linux" in " ".join(_advice(features, works, None))
