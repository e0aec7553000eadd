"""The state a rewind left each path in, for the conflict check of a later rewind.

A rewind to step k puts paths back with new inodes and times, so the steps before k no
longer describe how their paths are now: without this, rewinding further back would take
the rewind's own writes for changes by something else. Each rewind of a conversation
records, in ``<data>/checkpoints/settled/<conversation>.json``, the steps still kept and
the state it left each restored path in; a later rewind compares a path with that state
when the last step touching it was one of those kept then."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from corral.files import make_private_folder, write_text_atomically
from corral.shell.checkpoints.scan import Entry

__all__ = ["SettledStates"]

_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_KEPT_REWINDS = 50


class SettledStates:
    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._folder = data_dir / "checkpoints" / "settled"

    def _read(self, conversation_id: str) -> list[dict[str, Any]]:
        if not _ID.fullmatch(conversation_id):
            return []
        with contextlib.suppress(FileNotFoundError, ValueError):
            document = json.loads((self._folder / f"{conversation_id}.json").read_text("utf-8"))
            return list(document["rewinds"])
        return []

    def expected(
        self, conversation_id: str
    ) -> list[tuple[frozenset[str], dict[str, dict[str, Entry | None]]]]:
        """Per rewind, newest first: the steps kept then and the states it left (by root)."""
        return [
            (
                frozenset(rewind["kept"]),
                {
                    root: {p: None if e is None else Entry(**e) for p, e in states.items()}
                    for root, states in rewind["states"].items()
                },
            )
            for rewind in reversed(self._read(conversation_id))
        ]

    def record(
        self,
        conversation_id: str,
        kept: list[str],
        states: dict[str, dict[str, Entry | None]],
    ) -> None:
        """Add a rewind: ``kept`` the step ids left, ``states`` each restored path's state."""
        if not _ID.fullmatch(conversation_id):
            return
        rewinds = self._read(conversation_id)
        rewinds.append(
            {
                "kept": kept,
                "states": {
                    root: {p: None if e is None else asdict(e) for p, e in paths.items()}
                    for root, paths in states.items()
                },
            }
        )
        make_private_folder(self._data_dir, Path("checkpoints") / "settled")
        write_text_atomically(
            self._folder.parent,
            Path("settled") / f"{conversation_id}.json",
            json.dumps({"rewinds": rewinds[-_KEPT_REWINDS:]}),
        )
