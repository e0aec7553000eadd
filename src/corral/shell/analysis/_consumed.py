"""Names of the files programs read commands from: shell start-up files, makefiles,
``package.json``… (see :mod:`corral.shell.analysis._written`)."""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

__all__ = ["CONSUMERS", "MAKEFILES", "STARTUP_FILES", "is_consumed"]

STARTUP_FILES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_logout", ".zshrc",
     ".zshenv", ".zprofile", ".zlogin", ".kshrc", ".mkshrc", ".shrc"}
)  # fmt: skip
MAKEFILES = re.compile(r"^(GNUmakefile|[Mm]akefile|.*\.mk)$")
# Programs that read a project file and run commands it holds: which files, by name.
CONSUMERS: dict[str, re.Pattern[str]] = {
    "make": MAKEFILES,
    "gmake": MAKEFILES,
    "cmake": re.compile(r"^(CMakeLists\.txt|.*\.cmake)$"),
    "ninja": re.compile(r"^.*\.ninja$"),
    "npm": re.compile(r"^(package\.json|\.npmrc)$"),
    "yarn": re.compile(r"^(package\.json|\.npmrc|\.yarnrc(\.yml)?)$"),
    "pnpm": re.compile(r"^(package\.json|\.npmrc)$"),
    "bun": re.compile(r"^(package\.json|bunfig\.toml)$"),
    "just": re.compile(r"^(\.?[Jj]ustfile)$"),
    "rake": re.compile(r"^(Rakefile|.*\.rake)$"),
    "pytest": re.compile(r"^(conftest\.py|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml)$"),
    "tox": re.compile(r"^(tox\.ini|setup\.cfg|pyproject\.toml)$"),
    "nox": re.compile(r"^noxfile\.py$"),
    "cargo": re.compile(r"^(build\.rs|Cargo\.toml|config(\.toml)?)$"),
    "pip": re.compile(r"^(setup\.py|pyproject\.toml|setup\.cfg)$"),
}
"""Programs that run commands held in project files, and those files' names."""

_ANY = re.compile(
    "|".join(p.pattern for p in CONSUMERS.values())
    + "|"
    + "|".join(re.escape(name) for name in sorted(STARTUP_FILES))
)


@lru_cache(maxsize=4096)
def is_consumed(path: str) -> bool:
    """True when some program runs commands from a file named like ``path``."""
    return _ANY.fullmatch(posixpath.basename(path)) is not None
