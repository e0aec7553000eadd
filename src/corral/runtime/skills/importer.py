"""``corral skills import PATH``: validate a bundle, then copy it into the drive.

The copy lands in ``data://skills/<name>/`` under the name its front matter gives. A bundle
is refused whole, naming the file and field, when its ``SKILL.md`` breaks a rule, when it
holds a symbolic link (a link would point the drive somewhere the bundle's author chose),
when it is larger than :data:`IMPORT_MAX_BYTES`, or when the name is taken and ``replace``
is not set. The copy goes to a temporary folder first and is renamed into place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from corral.errors import UsageError
from corral.runtime.skills.bundle import SkillBundle, SkillError, parse_skill

__all__ = ["IMPORT_MAX_BYTES", "import_bundle"]

IMPORT_MAX_BYTES = 20 * 1024 * 1024


def _check_tree(source: Path) -> None:
    total = 0
    for root, dirs, files in os.walk(source):
        for name in [*dirs, *files]:
            path = Path(root) / name
            if path.is_symlink():
                raise UsageError(
                    f"{str(path)!r} is a symbolic link; a bundle to import may hold only plain "
                    "files and folders (copy the file it points to instead)"
                )
        for name in files:
            total += (Path(root) / name).stat().st_size
    if total > IMPORT_MAX_BYTES:
        raise UsageError(
            f"bundle {str(source)!r} holds {total:,} bytes, more than the {IMPORT_MAX_BYTES:,} "
            "an import may copy; leave large data out of the bundle"
        )


def import_bundle(source: Path, skills_dir: Path, *, replace: bool = False) -> SkillBundle:
    """Copy the bundle at ``source`` into ``skills_dir/<name>``; the imported bundle."""
    if not source.is_dir():
        raise UsageError(
            f"{str(source)!r} is not a folder; pass the bundle's folder (with SKILL.md)"
        )
    found = parse_skill(source, origin="folder", any_folder=True)
    if isinstance(found, SkillError):
        raise UsageError(f"cannot import: {found.describe()}")
    _check_tree(source)
    target = skills_dir / found.name
    if target.exists() and not replace:
        raise UsageError(
            f"skill {found.name!r} already exists in the drive ({str(target)!r}); pass "
            "--replace to overwrite it"
        )
    skills_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".import-{found.name}-", dir=skills_dir))
    try:
        copy = staging / found.name
        shutil.copytree(source, copy, symlinks=True)
        if target.exists():
            shutil.rmtree(target)
        copy.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    imported = parse_skill(target, origin="drive")
    if isinstance(imported, SkillError):  # the copy reads as the source did
        raise UsageError(f"cannot import: {imported.describe()}")
    return imported
