"""Where skills come from: packages' ``skills/`` folders, settings folders and the drive.

Every source is a folder of bundle folders. Packages come first (a disabled package's
skills are gone), then the folders in the start-up setting ``skill_paths``, then the project
drive's ``data://skills/``. A name already taken leaves the later bundle out with an error,
as does a bundle whose front matter breaks a rule. A ``skill_paths`` folder is taken as Claude
Code keeps skills: a project (its ``.claude/skills``), a ``.claude`` folder (its ``skills``)
or the skills folder itself, and its bundle folders may be symbolic links (an operator's
folder, as ``~/.claude/skills`` often is); a package's or the drive's may not.

Parsed bundles are cached by the ``SKILL.md`` modification time, and the whole set is reused
while a scan of the folders finds every bundle as it was: the skills block asks for the set
at every step of every run. A scan is one ``stat`` a source and one ``lstat`` a bundle: a
source's listing is kept while the folder's own stamp (which adding, removing or renaming an
entry changes, and ``ctime`` even when the modification time is put back) is as it was, and
read again (``scandir``) when it is not, when it had not settled, or when a bundle folder in it
is a link (a link's target can change with no trace in the folder). The skills of the
installed Python packages (``fixed``, corral's own among them) are scanned once: they ship
with the package's code, which is not loaded again either.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from corral.runtime.skills.bundle import (
    SKILL_FILE,
    SkillBundle,
    SkillError,
    SkillOrigin,
    parse_skill,
)

__all__ = ["DRIVE_SKILLS", "SkillCatalog", "SkillSet"]

DRIVE_SKILLS = "skills"
"""The drive folder skills are imported into: ``data://skills/<name>/``."""

SETTLED_SECONDS = 2.0
"""How old every ``SKILL.md`` must be before the set built from them is reused: a file
written within the file system's timestamp granularity of the scan could change again
without changing its stamp (git's "racily clean" index entries)."""

_Stamp = tuple[int, int, int, int] | None
"""A file's ``lstat`` as the cache compares it: mode, inode, modification time, size."""

_Entry = tuple[str, bool, _Stamp]
"""A bundle folder's name, whether the folder is a link, and its SKILL.md's stamp."""

_Scan = tuple[_Entry, ...] | OSError | Literal["escapes"] | None
"""One source's bundle folders; why it could not be listed; or None when it is absent."""

_Listed = tuple[tuple[str, bool, str], ...]
"""A source's bundle folders in name order: name, whether it is a link, path."""

_FolderStamp = tuple[int, int, int, int]
"""A source folder's ``stat`` as a kept listing is checked against: device, inode,
modification and change times."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillSet:
    """The skills available now, and the bundles left out with why."""

    skills: dict[str, SkillBundle] = field(default_factory=dict)
    errors: tuple[SkillError, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Root:
    folder: Path
    origin: SkillOrigin
    package: str | None = None
    fixed: bool = False


def _inside(path: Path, root: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except OSError:
        return False


def _skills_folder(folder: Path) -> Path:
    """The folder of bundles a ``skill_paths`` entry names, Claude Code's layouts included."""
    if folder.name == ".claude" and (folder / "skills").is_dir():
        return folder / "skills"
    if (folder / ".claude" / "skills").is_dir():
        return folder / ".claude" / "skills"
    return folder


def _lstat(path: str) -> _Stamp:
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_mode, found.st_ino, found.st_mtime_ns, found.st_size)


class SkillCatalog:
    """Finds the bundles of every source; cheap to ask again."""

    def __init__(
        self,
        *,
        packages: Mapping[str, Path],
        drive_dir: Path,
        folders: Iterable[Path] = (),
        fixed: Iterable[str] = (),
    ) -> None:
        self._packages = dict(packages)
        self._fixed = frozenset(fixed)
        """Packages whose skills are scanned once (installed with their code)."""
        self._fixed_scans: dict[Path, _Scan] = {}
        self._drive = drive_dir / DRIVE_SKILLS
        self._folders = list(folders)
        self._cache: dict[Path, tuple[_Stamp, SkillBundle | SkillError]] = {}
        self._roots_of: tuple[tuple[frozenset[str], int], list[_Root]] | None = None
        self._last: tuple[object, SkillSet] | None = None
        """The last scan and the set built from it, kept once its files had settled."""
        self._listings: dict[Path, tuple[_FolderStamp, _Listed]] = {}
        """Each source folder's listing, kept while the folder's stamp is as it was."""

    def add_package(self, name: str, path: Path) -> None:
        """A package that arrived after start-up (an MCP server has no skills folder)."""
        self._packages[name] = path
        self._roots_of = None
        self._last = None

    @property
    def drive_folder(self) -> Path:
        return self._drive

    def _roots(self, disabled: frozenset[str]) -> list[_Root]:
        key = (disabled, len(self._packages))
        if self._roots_of is not None and self._roots_of[0] == key:
            return self._roots_of[1]
        roots = [
            _Root(folder=path / "skills", origin="package", package=name, fixed=name in self._fixed)
            for name, path in sorted(self._packages.items())
            if name not in disabled
        ]
        roots += [_Root(folder=_skills_folder(folder), origin="folder") for folder in self._folders]
        roots.append(_Root(folder=self._drive, origin="drive"))
        self._roots_of = (key, roots)
        return roots

    def _scan(self, root: _Root) -> _Scan:
        """The bundle folders of ``root`` in name order."""
        if root.fixed:
            if root.folder not in self._fixed_scans:
                self._fixed_scans[root.folder] = self._scan(replace(root, fixed=False))
            return self._fixed_scans[root.folder]
        if root.origin == "drive" and self._drive_escapes(root):
            return "escapes"
        found = self._listing(root.folder)
        if not isinstance(found, tuple):
            return found
        return tuple((name, linked, _lstat(f"{path}/{SKILL_FILE}")) for name, linked, path in found)

    def _listing(self, folder: Path) -> _Listed | OSError | None:
        """The bundle folders in ``folder``: the kept listing while the folder's stamp is
        the one it was listed under, else listed again."""
        try:
            found = os.stat(folder)
        except FileNotFoundError:
            self._listings.pop(folder, None)
            return None
        except OSError as exc:
            return exc
        stamp = (found.st_dev, found.st_ino, found.st_mtime_ns, found.st_ctime_ns)
        kept = self._listings.get(folder)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        listed_at = time.time_ns()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(
                    (entry.name, entry.is_symlink(), entry.path)
                    for entry in entries
                    if not entry.name.startswith(".") and entry.is_dir()
                )
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc
        # Kept only once settled: a change within the timestamp granularity of the listing
        # could leave the folder's stamp as it was (see SETTLED_SECONDS). Any later change of
        # an entry moves the modification time off a settled one; putting it back moves ctime.
        settled = stamp[2] < listed_at - int(SETTLED_SECONDS * 1e9)
        if settled and not any(linked for _, linked, _ in listed):
            self._listings[folder] = (stamp, tuple(listed))
        else:
            self._listings.pop(folder, None)
        return tuple(listed)

    def _drive_escapes(self, root: _Root) -> bool:
        """Whether the drive's skills folder leads outside the drive (a link elsewhere)."""
        try:
            linked = stat.S_ISLNK(os.lstat(root.folder).st_mode)
        except OSError:
            linked = False
        # Only a link can lead elsewhere: a plain folder is its parent's real path plus its name.
        return linked and not _inside(root.folder, self._drive.parent)

    def _parse(
        self, folder: Path, root: _Root, linked: bool, skill: _Stamp, settled: int
    ) -> SkillBundle | SkillError:
        linked_folder = linked and root.origin != "folder"
        if linked_folder or (skill is not None and stat.S_ISLNK(skill[0])):
            # A link would make the platform read, and a skill's cwd grant reach, wherever
            # the link's author pointed it: only an operator's own folders may hold links.
            where = folder if linked_folder else folder / SKILL_FILE
            return SkillError(
                file=str(folder / SKILL_FILE),
                field="",
                message=f"{str(where)!r} is a symbolic link; a skill's folder and SKILL.md "
                "must be plain files where the skill lives",
            )
        cached = self._cache.get(folder)
        if cached is not None and skill is not None and cached[0] == skill:
            return cached[1]
        found = parse_skill(folder, origin=root.origin, package=root.package)
        if skill is not None and skill[2] < settled:
            self._cache[folder] = (skill, found)
        return found

    def load(self, *, disabled: frozenset[str] = frozenset()) -> SkillSet:
        """Every available skill (packages in ``disabled`` left out) and every error."""
        scanned_at = time.time_ns()
        roots = self._roots(disabled)
        scans = [(root, self._scan(root)) for root in roots]
        key = (roots, tuple(scan for _, scan in scans))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        settled = scanned_at - int(SETTLED_SECONDS * 1e9)
        found = self._build(scans, settled)
        if all(
            not isinstance(scan, tuple) or all(e[2] is None or e[2][2] < settled for e in scan)
            for _, scan in scans
        ):
            self._last = (key, found)
        else:
            self._last = None
        return found

    def _build(self, scans: list[tuple[_Root, _Scan]], settled: int) -> SkillSet:
        skills: dict[str, SkillBundle] = {}
        errors: list[SkillError] = []
        for root, scan in scans:
            if scan == "escapes":
                errors.append(
                    SkillError(
                        file=str(root.folder),
                        field="",
                        message="the drive's skills folder leads outside the drive (a symbolic "
                        "link?); its skills are not loaded",
                    )
                )
                continue
            if scan is None:
                continue
            if isinstance(scan, OSError):
                errors.append(SkillError(file=str(root.folder), field="", message=str(scan)))
                continue
            for name, linked, skill in scan:
                folder = root.folder / name
                found = self._parse(folder, root, linked, skill, settled)
                if isinstance(found, SkillError):
                    errors.append(found)
                elif found.name in skills:
                    other = skills[found.name].folder / SKILL_FILE
                    errors.append(
                        SkillError(
                            file=str(folder / SKILL_FILE),
                            field="name",
                            message=f"skill name {found.name!r} is already taken by "
                            f"{str(other)!r}; rename one of them",
                        )
                    )
                else:
                    skills[found.name] = found
        return SkillSet(skills=skills, errors=tuple(errors))
