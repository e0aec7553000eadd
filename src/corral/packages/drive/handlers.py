"""Handlers of the drive package, re-exported by name, with their policy hooks.

Each tool's policy hook resolves its target at the pipeline's policy step (before any
approval is asked); the handler resolves it again right before it acts, since rights may
change while an approval waits.
"""

from __future__ import annotations

from typing import Any

from corral.packages.drive.install import install
from corral.packages.drive.listing import fs_list, fs_list_policy
from corral.packages.drive.reading import fs_read, fs_read_policy
from corral.packages.drive.search import fs_search, fs_search_policy
from corral.packages.drive.writing import fs_edit, fs_write, fs_write_policy

POLICY_HOOKS: dict[str, Any] = {
    "fs_read": fs_read_policy,
    "fs_write": fs_write_policy,
    "fs_edit": fs_write_policy,
    "fs_list": fs_list_policy,
    "fs_search": fs_search_policy,
}

__all__ = [
    "POLICY_HOOKS",
    "fs_edit",
    "fs_list",
    "fs_read",
    "fs_search",
    "fs_write",
    "install",
]
