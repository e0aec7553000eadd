"""Fingerprints of the tool files that passed the contract's JSON Schema checks.

Those checks (the file against the contract's meta-schema, its ``input_schema`` against its
draft's meta-schema) were a third of a second of every open for the built-in packages alone,
though the files rarely change. A file whose fingerprint (its bytes with :data:`CONTRACT`)
is recorded here passed them before and skips them; any change to the file, or to the
contract, gives another fingerprint. The record lives in the platform's private folder,
out of the reach of commands, and only ever lists files that passed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["CONTRACT", "CheckedFiles"]

CONTRACT = "tool-contract-1"
"""Changes when :func:`corral.tools.contract.parse_tool`'s checks do (so do their results)."""


class CheckedFiles:
    """The fingerprints recorded at ``path`` (None: kept in memory only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._known = self._read()
        self._used: set[str] = set()

    def _read(self) -> set[str]:
        if self.path is None:
            return set()
        try:
            recorded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()  # none yet, or unreadable: every file is checked again
        if not isinstance(recorded, dict) or recorded.get("contract") != CONTRACT:
            return set()
        files = recorded.get("files")
        return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()

    @staticmethod
    def fingerprint(content: bytes) -> str:
        return hashlib.sha256(CONTRACT.encode() + b"\0" + content).hexdigest()

    def passed(self, fingerprint: str) -> bool:
        """Whether the file with this fingerprint passed the checks before."""
        if fingerprint in self._known:
            self._used.add(fingerprint)
            return True
        return False

    def add(self, fingerprint: str) -> None:
        """Record a file that passed the checks."""
        self._used.add(fingerprint)

    def save(self) -> None:
        """Keep the fingerprints of the files this load passed (so the record holds no
        version of a file that has changed since), when they differ from the record's;
        atomically: a reader sees the old record or the new one. A record that cannot be
        written is only a slower next start."""
        if self.path is None or self._used == self._known:
            return
        body = json.dumps({"contract": CONTRACT, "files": sorted(self._used)})
        with contextlib.suppress(OSError):
            descriptor, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".checked-")
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                    out.write(body)
                os.replace(temporary, self.path)
            except OSError:
                os.unlink(temporary)
                raise
        self._known = set(self._used)
