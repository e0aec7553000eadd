"""Handlers of the drive package, re-exported by name, with their policy hooks.

Each tool's policy hook resolves its target at the pipeline's policy step (before any
approval is asked); the handler resolves it again right before it acts, since rights may
change while an approval waits. Each tool's module (reading brings the PDF and extraction
modules) loads with its first policy check or call, not with every open.
"""

from __future__ import annotations

from typing import Any

from corral.packages.drive.install import install
from corral.tools.lazy_handler import lazy_handler

_HERE = "corral.packages.drive"
fs_list = lazy_handler(f"{_HERE}.listing", "fs_list")
fs_read = lazy_handler(f"{_HERE}.reading", "fs_read")
fs_search = lazy_handler(f"{_HERE}.search", "fs_search")
fs_write = lazy_handler(f"{_HERE}.writing", "fs_write")
fs_edit = lazy_handler(f"{_HERE}.writing", "fs_edit")
_fs_write_policy = lazy_handler(f"{_HERE}.writing", "fs_write_policy")

POLICY_HOOKS: dict[str, Any] = {
    "fs_read": lazy_handler(f"{_HERE}.reading", "fs_read_policy"),
    "fs_write": _fs_write_policy,
    "fs_edit": _fs_write_policy,
    "fs_list": lazy_handler(f"{_HERE}.listing", "fs_list_policy"),
    "fs_search": lazy_handler(f"{_HERE}.search", "fs_search_policy"),
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
