"""``corral skills import PATH``: validate a bundle, then copy it into the drive.

The copy lands in ``data://skills/<name>/`` under the name its front matter gives. A bundle
is refused whole, naming the file and field, when its ``SKILL.md`` breaks a rule, when it
holds a symbolic link (a link would point the drive somewhere the bundle's author chose),
when it is larger than :data:`IMPORT_MAX_BYTES`, or when the name is taken and ``replace``
is not set. The copy goes to a temporary folder first and is renamed into place, every
write made from the drive's root without following a link (:mod:`corral.files`): a command
that turned ``data://skills`` into a link cannot make an import land outside the drive.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from pathlib import Path

from corral.errors import ToolError, UsageError
from corral.files import make_folders, open_folder, write_file
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


def _copy_into(source: Path, skills_dir: Path, name: str) -> None:
    drive = skills_dir.parent
    drive.mkdir(parents=True, exist_ok=True)  # the drive itself is the operator's folder
    staging = skills_dir / f".import-{name}-{secrets.token_hex(4)}"
    try:
        for folder, _dirs, files in os.walk(source):
            below = staging / name / Path(folder).relative_to(source)
            make_folders(drive, below)
            for file in files:
                data = (Path(folder) / file).read_bytes()
                mode = (Path(folder) / file).stat().st_mode & 0o777
                write_file(drive, below / file, data, mode=mode)
        with open_folder(drive, skills_dir) as skills, open_folder(drive, staging) as staged:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(os.stat(name, dir_fd=skills, follow_symlinks=False).st_mode):
                    shutil.rmtree(name, dir_fd=skills)
                else:
                    os.unlink(name, dir_fd=skills)
            os.rename(name, name, src_dir_fd=staged, dst_dir_fd=skills)
    finally:
        with (
            contextlib.suppress(FileNotFoundError, ToolError),
            open_folder(drive, skills_dir) as skills,
        ):
            shutil.rmtree(staging.name, dir_fd=skills)


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
    try:
        _copy_into(source, skills_dir, found.name)
    except ToolError as err:  # a link or a file where the drive's skills folder should be
        raise UsageError(f"cannot import: {err.message}") from None
    imported = parse_skill(target, origin="drive")
    if isinstance(imported, SkillError):  # the copy reads as the source did
        raise UsageError(f"cannot import: {imported.describe()}")
    return imported
