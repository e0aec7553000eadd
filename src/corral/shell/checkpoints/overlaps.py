"""Which calls ran at the same time as a call on the same source.

Calls on one source do not take turns: a path changed while two of them ran is in both
change sets, and which call changed it cannot be told. Each call that kept a change set and
overlapped others records, per source root, the ids of those calls (and their
conversation) in ``<data>/checkpoints/overlaps/<call>.json``, so a rewind undoing one and
not the other can refuse the shared paths (:mod:`corral.shell.checkpoints.rewind`). A call
that overlapped nothing, the usual case, writes no file.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from corral.files import make_private_folder, write_text_atomically

__all__ = ["Overlapped", "Overlaps"]

Overlapped = dict[str, dict[str, str]]
"""By source root: the overlapping calls' ids, each with its conversation ("" for none)."""

_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


class Overlaps:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        """``<data>/checkpoints``."""

    def record(self, call_id: str, overlapped: Overlapped) -> None:
        """Keep what ``call_id`` overlapped (nothing is written when it is empty)."""
        kept = {root: calls for root, calls in overlapped.items() if calls}
        if not kept or not _ID.fullmatch(call_id):
            return
        make_private_folder(self._folder, Path("overlaps"))
        write_text_atomically(self._folder, Path("overlaps") / f"{call_id}.json", json.dumps(kept))

    def read(self, call_id: str) -> Overlapped:
        if not _ID.fullmatch(call_id):
            return {}
        with contextlib.suppress(FileNotFoundError, ValueError):
            document = json.loads((self._folder / "overlaps" / f"{call_id}.json").read_text())
            return {str(root): dict(calls) for root, calls in document.items()}
        return {}

    def forget(self, call_id: str) -> None:
        if _ID.fullmatch(call_id):
            with contextlib.suppress(FileNotFoundError):
                (self._folder / "overlaps" / f"{call_id}.json").unlink()
