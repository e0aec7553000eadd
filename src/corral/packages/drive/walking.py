"""Walking a folder the caller may read: what fs_list and fs_search's own search visit.

Links are never followed. A folder belonging to another source is judged by that source's
rights (a nested source the caller may not read is skipped, and counted), and the platform's
private area and own files are never entered, whatever source covers them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from corral.packages.drive.locations import in_private_area
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy

__all__ = ["Entry", "Walk"]


@dataclass(frozen=True, slots=True)
class Entry:
    relative: str
    """``/``-separated path below the walked folder."""
    entry: os.DirEntry[str]
    depth: int


@dataclass(slots=True)
class Walk:
    """One walk under ``root`` for ``caller``; ``skipped`` counts what policy kept out."""

    root: Path
    caller: Caller
    sources: SourcePolicy
    hidden: bool = False
    skipped: int = 0
    errors: int = 0
    _allowed: dict[str, bool] = field(default_factory=dict)

    def readable(self, path: str) -> bool:
        """Whether the caller may read ``path`` (a real folder path), cached per folder."""
        known = self._allowed.get(path)
        if known is not None:
            return known
        resolved = self.sources.resolve(path)
        allowed = (
            not resolved.protected
            and in_private_area(resolved.path, self.sources.data_root) is None
            and resolved.source is not None
            and "read" in resolved.source.rights_for(self.caller)
        )
        self._allowed[path] = allowed
        return allowed

    def entries(self, max_depth: int) -> Iterator[Entry]:
        """Entries breadth by folder, depth-first, up to ``max_depth`` levels."""
        stack: list[tuple[str, str, int]] = [(str(self.root), "", 1)]
        while stack:
            folder, prefix, depth = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    found = sorted(listing, key=lambda e: e.name)
            except OSError:
                self.errors += 1
                continue
            below: list[tuple[str, str, int]] = []
            for entry in found:
                if not self.hidden and entry.name.startswith("."):
                    continue
                relative = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not self.readable(entry.path):
                        self.skipped += 1
                        continue
                    if depth < max_depth:
                        below.append((entry.path, relative + "/", depth + 1))
                elif not entry.is_symlink() and not self.readable(folder):
                    self.skipped += 1
                    continue
                elif not entry.is_symlink() and self._protected_file(entry.path):
                    self.skipped += 1
                    continue
                yield Entry(relative, entry, depth)
            stack.extend(reversed(below))

    def _protected_file(self, path: str) -> bool:
        # The walk starts at a real folder and follows no link, so ``path`` is real already.
        return self.sources.is_protected(path)
