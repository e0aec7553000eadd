"""What a rewind of files would put back, path by path, with a diff for text files.

Compares each path the undone steps touched as it is now with the state the earliest of
them found (what :func:`~corral.shell.checkpoints.restore.restore` gives back). Only
reads: nothing under the source changes."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from corral.shell.checkpoints.blobs import BlobStore, digest_of
from corral.shell.checkpoints.capture import Checkpoint, Prior
from corral.shell.checkpoints.scan import Entry, Kind, entry_of

__all__ = ["DIFF_MAX_CHARS", "DIFF_MAX_FILE_BYTES", "PathChange", "path_changes"]

Action = Literal["remove", "recreate", "replace", "modify"]
"""What the rewind does to the path: ``remove`` one the steps created, ``recreate`` one
they deleted, ``replace`` one whose kind they changed (file, folder, link), ``modify`` its
content, mode or link target."""

DIFF_MAX_FILE_BYTES = 1 << 20
"""Files larger than this (either side) get no diff, only ``content`` set."""
DIFF_MAX_CHARS = 64_000
"""A diff longer than this is cut (``diff_truncated``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PathChange:
    """One path a rewind puts back: as it is now, and as the rewind leaves it ("then")."""

    root: str
    """The source's real root folder."""
    path: str
    """Relative to ``root``."""
    action: Action
    kind_now: Kind | None
    kind_then: Kind | None
    content: bool = False
    """The file's content differs."""
    mode_now: int | None = None
    mode_then: int | None = None
    target_now: str | None = None
    """A link's target now."""
    target_then: str | None = None
    binary: bool = False
    """A file whose content is not UTF-8 text (no diff is made)."""
    diff: str | None = None
    """A unified diff from now to then, for text files within the size cap."""
    diff_truncated: bool = False
    restorable: bool = True
    """False for a file that was unreadable when its checkpoint was taken."""

    @property
    def mode_changed(self) -> bool:
        return (
            self.mode_now is not None
            and self.mode_then is not None
            and (self.mode_now != self.mode_then)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "path": self.path,
            "action": self.action,
            "kind_now": self.kind_now,
            "kind_then": self.kind_then,
            "content": self.content,
            "mode_now": None if self.mode_now is None else f"{self.mode_now:04o}",
            "mode_then": None if self.mode_then is None else f"{self.mode_then:04o}",
            "target_now": self.target_now,
            "target_then": self.target_then,
            "binary": self.binary,
            "diff": self.diff,
            "diff_truncated": self.diff_truncated,
            "restorable": self.restorable,
        }


def _now(root: Path, path: str) -> Entry | None:
    full = str(root / path)
    try:
        return entry_of(full, os.lstat(full))
    except FileNotFoundError:
        return None


def _read(path: Path, limit: int) -> bytes | None:
    """The file's bytes, None when it is larger than ``limit`` or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as src:
        data = src.read(limit + 1)
    return None if len(data) > limit else data


def _digest(path: Path) -> str:
    try:
        return digest_of(path)
    except OSError:
        return ""


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True, slots=True)
class _Side:
    data: bytes | None
    """None: too large or unreadable (content compared by size only)."""
    present: bool


def _diff(path: str, now: _Side, then: _Side) -> tuple[bool, str | None, bool]:
    """(binary, diff, truncated) from ``now`` to ``then``."""
    if (now.present and now.data is None) or (then.present and then.data is None):
        return False, None, False
    texts = [_text(side.data) if side.data is not None else "" for side in (now, then)]
    if texts[0] is None or texts[1] is None:
        return True, None, False
    lines = difflib.unified_diff(
        texts[0].splitlines(keepends=True),
        texts[1].splitlines(keepends=True),
        fromfile=f"a/{path}" if now.present else "/dev/null",
        tofile=f"b/{path}" if then.present else "/dev/null",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text) > DIFF_MAX_CHARS:
        return False, text[:DIFF_MAX_CHARS], True
    return False, text, False


def _change(root: Path, blobs: BlobStore, path: str, prior: Prior | None) -> PathChange | None:
    now = _now(root, path)
    if prior is None and now is None:
        return None
    kind_now = now.kind if now else None
    kind_then = prior.kind if prior else None
    base: dict[str, Any] = {
        "root": str(root),
        "path": path,
        "kind_now": kind_now,
        "kind_then": kind_then,
        "mode_now": now.mode if now and now.kind != "link" else None,
        "mode_then": prior.mode if prior and prior.kind != "link" else None,
        "target_now": now.target if now and now.kind == "link" else None,
        "target_then": prior.target if prior and prior.kind == "link" else None,
        "restorable": not (prior is not None and prior.kind == "file" and not prior.digest),
    }
    if prior is None:
        action: Action = "remove"
    elif now is None:
        action = "recreate"
    elif kind_now != kind_then:
        action = "replace"
    else:
        action = "modify"
    now_file = _Side(
        _read(root / path, DIFF_MAX_FILE_BYTES) if kind_now == "file" else b"",
        kind_now == "file",
    )
    then_file = _Side(
        blobs.read(prior.digest, DIFF_MAX_FILE_BYTES)
        if prior is not None and prior.kind == "file" and prior.digest
        else b"",
        kind_then == "file",
    )
    content = False
    if now_file.present or then_file.present:
        if (
            now_file.present
            and then_file.present
            and now_file.data is not None
            and (then_file.data is not None)
        ):
            content = now_file.data != then_file.data
        elif now_file.present and then_file.present:
            content = _digest(root / path) != (prior.digest if prior else "")
        else:
            content = True
    if (
        action == "modify"
        and not content
        and base["mode_now"] == base["mode_then"]
        and (base["target_now"] == base["target_then"])
    ):
        return None  # already as the rewind would leave it
    binary, diff, truncated = _diff(path, now_file, then_file) if content else (False, None, False)
    return PathChange(
        action=action, content=content, binary=binary, diff=diff, diff_truncated=truncated, **base
    )


def path_changes(
    root: Path, blobs: BlobStore, checkpoints: Sequence[Checkpoint]
) -> list[PathChange]:
    """What restoring ``checkpoints`` (oldest first) under ``root`` would change, by path."""
    wanted: dict[str, Prior | None] = {}
    for checkpoint in checkpoints:
        for path, prior in checkpoint.priors.items():
            wanted.setdefault(path, prior)
    found = (_change(root, blobs, path, prior) for path, prior in sorted(wanted.items()))
    return [change for change in found if change is not None]
