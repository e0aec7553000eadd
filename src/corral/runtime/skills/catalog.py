"""Where skills come from: packages' ``skills/`` folders, settings folders and the drive.

Every source is a folder of bundle folders. Packages come first (a disabled package's
skills are gone), then the folders in the start-up setting ``skill_paths``, then the project
drive's ``data://skills/``. A name already taken leaves the later bundle out with an error,
as does a bundle whose front matter breaks a rule. Parsed bundles are cached by the
``SKILL.md`` modification time, so listing them every step costs a few ``stat`` calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

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


def _inside(path: Path, root: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except OSError:
        return False


class SkillCatalog:
    """Finds the bundles of every source; cheap to ask again."""

    def __init__(
        self,
        *,
        packages: Mapping[str, Path],
        drive_dir: Path,
        folders: Iterable[Path] = (),
    ) -> None:
        self._packages = dict(packages)
        self._drive = drive_dir / DRIVE_SKILLS
        self._folders = list(folders)
        self._cache: dict[Path, tuple[int, SkillBundle | SkillError]] = {}

    def add_package(self, name: str, path: Path) -> None:
        """A package that arrived after start-up (an MCP server has no skills folder)."""
        self._packages[name] = path

    @property
    def drive_folder(self) -> Path:
        return self._drive

    def _roots(self, disabled: frozenset[str]) -> list[_Root]:
        roots = [
            _Root(folder=path / "skills", origin="package", package=name)
            for name, path in sorted(self._packages.items())
            if name not in disabled
        ]
        roots += [_Root(folder=folder, origin="folder") for folder in self._folders]
        roots.append(_Root(folder=self._drive, origin="drive"))
        return roots

    def _parse(self, folder: Path, root: _Root) -> SkillBundle | SkillError:
        linked = next((p for p in (folder, folder / SKILL_FILE) if p.is_symlink()), None)
        if linked is not None:
            # A link would make the platform read, and a skill's cwd grant reach, wherever
            # the link's author pointed it.
            return SkillError(
                file=str(folder / SKILL_FILE),
                field="",
                message=f"{str(linked)!r} is a symbolic link; a skill's folder and SKILL.md "
                "must be plain files where the skill lives",
            )
        try:
            stamp = os.stat(folder / SKILL_FILE).st_mtime_ns
        except OSError:
            stamp = -1
        cached = self._cache.get(folder)
        if cached is not None and cached[0] == stamp and stamp != -1:
            return cached[1]
        found = parse_skill(folder, origin=root.origin, package=root.package)
        self._cache[folder] = (stamp, found)
        return found

    def load(self, *, disabled: frozenset[str] = frozenset()) -> SkillSet:
        """Every available skill (packages in ``disabled`` left out) and every error."""
        skills: dict[str, SkillBundle] = {}
        errors: list[SkillError] = []
        for root in self._roots(disabled):
            if root.origin == "drive" and not _inside(root.folder, self._drive.parent):
                errors.append(
                    SkillError(
                        file=str(root.folder),
                        field="",
                        message="the drive's skills folder leads outside the drive (a symbolic "
                        "link?); its skills are not loaded",
                    )
                )
                continue
            try:
                entries = sorted(p for p in root.folder.iterdir() if p.is_dir())
            except FileNotFoundError:
                continue
            except OSError as exc:
                errors.append(SkillError(file=str(root.folder), field="", message=str(exc)))
                continue
            for folder in entries:
                if folder.name.startswith("."):
                    continue
                found = self._parse(folder, root)
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
