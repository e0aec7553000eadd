"""The catalog's reuse of a scanned skill set: it must see every change a scan can see.

The set is asked for at every step, so it is reused while the folders scan the same; each
test first makes that reuse happen (files aged past the settling time), then changes the
folders one way and expects the next load to show it.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from pytest import MonkeyPatch

from corral.runtime.skills import SkillCatalog
from corral.runtime.skills.catalog import SETTLED_SECONDS
from tests.runtime.skills.conftest import write_bundle

HOUR_NS = 3_600 * 10**9


def age(*files: Path, by_ns: int = HOUR_NS) -> None:
    """Set each file's modification time ``by_ns`` in the past (settled)."""
    then = time.time_ns() - by_ns
    for file in files:
        os.utime(file, ns=(then, then), follow_symlinks=False)


def settled_catalog(tmp_path: Path) -> tuple[SkillCatalog, Path, Path]:
    """A catalog of a package bundle ``pkg-skill`` and a drive bundle ``mine``, both
    settled, loaded once so that its set is kept."""
    package = tmp_path / "pkg"
    drive = tmp_path / "drive"
    one = write_bundle(package / "skills", "pkg-skill")
    two = write_bundle(drive / "skills", "mine")
    age(one / "SKILL.md", two / "SKILL.md")
    catalog = SkillCatalog(packages={"pkg": package}, drive_dir=drive)
    first = catalog.load()
    assert sorted(first.skills) == ["mine", "pkg-skill"] and not first.errors
    assert catalog.load() is first  # reused: the scan found everything as it was
    return catalog, package / "skills", drive / "skills"


def test_a_new_or_removed_bundle_is_seen_at_once(tmp_path: Path) -> None:
    catalog, _, drive_skills = settled_catalog(tmp_path)
    added = write_bundle(drive_skills, "later")
    age(added / "SKILL.md")  # even settled at once, the listing differs
    assert sorted(catalog.load().skills) == ["later", "mine", "pkg-skill"]
    shutil.rmtree(added)
    assert sorted(catalog.load().skills) == ["mine", "pkg-skill"]
    (drive_skills / "no-skill-file").mkdir()
    assert [e.message for e in catalog.load().errors] == ["has no SKILL.md; add one"]


def test_an_edited_skill_file_is_seen_even_with_its_old_time(tmp_path: Path) -> None:
    catalog, package_skills, _ = settled_catalog(tmp_path)
    skill = package_skills / "pkg-skill" / "SKILL.md"
    stamp = skill.stat().st_mtime_ns
    skill.write_text(skill.read_text().replace("Publish notes.", "Publish longer notes."))
    os.utime(skill, ns=(stamp, stamp))  # a tool that keeps modification times
    assert catalog.load().skills["pkg-skill"].description == "Publish longer notes."


def test_a_fresh_skill_file_is_read_again_until_it_settles(tmp_path: Path) -> None:
    # Written within the timestamp granularity, a second write can keep time and size.
    drive = tmp_path / "drive"
    folder = write_bundle(drive / "skills", "fresh", description="First words.")
    skill = folder / "SKILL.md"
    catalog = SkillCatalog(packages={}, drive_dir=drive)
    assert catalog.load().skills["fresh"].description == "First words."
    before = skill.stat()
    skill.write_text(skill.read_text().replace("First words.", "Other words."))
    os.utime(skill, ns=(before.st_mtime_ns, before.st_mtime_ns))
    after = skill.stat()
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert catalog.load().skills["fresh"].description == "Other words."
    # Once settled, the set is kept.
    age(skill, by_ns=int(SETTLED_SECONDS * 10**9) + HOUR_NS)
    kept = catalog.load()
    assert catalog.load() is kept


def test_links_swapped_in_after_the_set_was_kept_are_refused(tmp_path: Path) -> None:
    catalog, package_skills, drive_skills = settled_catalog(tmp_path)
    elsewhere = write_bundle(tmp_path / "elsewhere", "pkg-skill")
    age(elsewhere / "SKILL.md")
    skill = package_skills / "pkg-skill" / "SKILL.md"
    skill.unlink()
    skill.symlink_to(elsewhere / "SKILL.md")
    found = catalog.load()
    assert "pkg-skill" not in found.skills
    assert ["symbolic link" in e.message for e in found.errors] == [True]
    # The bundle folder itself swapped for a link.
    shutil.rmtree(drive_skills / "mine")
    (drive_skills / "mine").symlink_to(elsewhere)
    found = catalog.load()
    assert found.skills == {}
    assert all("symbolic link" in e.message for e in found.errors) and len(found.errors) == 2


def test_the_drive_folder_swapped_for_a_link_outside_is_refused(tmp_path: Path) -> None:
    catalog, _, drive_skills = settled_catalog(tmp_path)
    outside = tmp_path / "outside"
    write_bundle(outside, "mine")
    age(outside / "mine" / "SKILL.md")
    shutil.rmtree(drive_skills)
    drive_skills.symlink_to(outside)
    found = catalog.load()
    assert sorted(found.skills) == ["pkg-skill"]
    assert ["leads outside the drive" in e.message for e in found.errors] == [True]


def test_disabling_a_package_or_adding_one_changes_the_set(tmp_path: Path) -> None:
    catalog, _, _ = settled_catalog(tmp_path)
    assert sorted(catalog.load(disabled=frozenset({"pkg"})).skills) == ["mine"]
    extra = tmp_path / "extra"
    age(write_bundle(extra / "skills", "extra-skill") / "SKILL.md")
    catalog.add_package("extra", extra)
    assert sorted(catalog.load().skills) == ["extra-skill", "mine", "pkg-skill"]


def settled_folders(tmp_path: Path) -> tuple[SkillCatalog, Path]:
    """A settled catalog whose source folders have settled too, so their listings are kept."""
    catalog, package_skills, drive_skills = settled_catalog(tmp_path)
    age(package_skills, drive_skills)
    catalog.load()
    return catalog, drive_skills


def test_a_settled_folder_is_not_listed_again(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    catalog, _ = settled_folders(tmp_path)
    listed: list[object] = []
    real = os.scandir

    def counted(path: Any) -> Any:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(os, "scandir", counted)
    kept = catalog.load()
    assert catalog.load() is kept and listed == []


def test_a_settled_folder_shows_each_change_at_once(tmp_path: Path) -> None:
    catalog, drive_skills = settled_folders(tmp_path)
    added = write_bundle(drive_skills, "later")
    age(added / "SKILL.md")
    assert sorted(catalog.load().skills) == ["later", "mine", "pkg-skill"]
    age(drive_skills)
    catalog.load()
    added.rename(drive_skills / ".later")  # hidden
    assert sorted(catalog.load().skills) == ["mine", "pkg-skill"]
    age(drive_skills)
    catalog.load()
    (drive_skills / ".later").rename(drive_skills / "later")
    assert sorted(catalog.load().skills) == ["later", "mine", "pkg-skill"]
    age(drive_skills)
    catalog.load()
    shutil.rmtree(drive_skills / "later")
    assert sorted(catalog.load().skills) == ["mine", "pkg-skill"]


def test_a_bundle_folder_that_is_a_link_is_looked_at_every_time(tmp_path: Path) -> None:
    # An operator's folder may link a bundle elsewhere; where it leads can change with no
    # trace in the folder holding the link, so that folder's listing is never kept.
    mine = tmp_path / "operator"
    target = write_bundle(tmp_path / "elsewhere", "linked")
    age(target / "SKILL.md")
    mine.mkdir()
    (mine / "linked").symlink_to(target)
    age(mine)
    catalog = SkillCatalog(packages={}, drive_dir=tmp_path / "drive", folders=[mine])
    assert sorted(catalog.load().skills) == ["linked"]
    shutil.rmtree(target)
    target.mkdir()
    (target / "SKILL.md").write_text("not a bundle")
    assert catalog.load().skills == {}


def test_an_installed_packages_skills_are_scanned_once(
    tmp_path: Path, monkeypatch: MonkeyPatch
) -> None:
    # An installed Python package's skills ship with its code, which is not loaded again
    # either; a folder package's are still looked at every time.
    installed = tmp_path / "installed"
    folder = tmp_path / "folder"
    age(write_bundle(installed / "skills", "shipped") / "SKILL.md")
    age(write_bundle(folder / "skills", "local") / "SKILL.md")
    catalog = SkillCatalog(
        packages={"installed": installed, "folder": folder},
        drive_dir=tmp_path / "drive",
        fixed=["installed"],
    )
    assert sorted(catalog.load().skills) == ["local", "shipped"]
    looked: list[str] = []
    real_stat, real_lstat = os.stat, os.lstat

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        looked.append(str(path))
        return real_stat(path, *args, **kwargs)

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        looked.append(str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "lstat", lstat)
    catalog.load()
    assert looked and not [p for p in looked if p.startswith(str(installed))]
    assert [p for p in looked if p.startswith(str(folder))]
    edited = folder / "skills" / "local" / "SKILL.md"
    edited.write_text(edited.read_text().replace("Publish notes.", "Other notes."))
    assert catalog.load().skills["local"].description == "Other notes."
