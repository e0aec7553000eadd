"""A delegate run's folder under its parent conversation: ``meta.json`` and
``messages.jsonl`` (one timeline row a line), in the project drive so that whoever may read
``data://`` reads them with the platform's own read path.

Every write goes from the drive's root without following a link (:mod:`corral.files`): a
command that planted a link on the way (``.corral``, ``conversations``, a run folder) makes
the write refuse instead of landing outside the drive."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from corral.files import append_file, make_folders, write_text_atomically
from corral.runtime.timeline import TimelineRow
from corral.settings import Settings

__all__ = ["RunFolder"]

RUNS_PATH = ".corral/conversations/{conversation}/runs/{run}"


class RunFolder:
    """Where one delegate run of ``parent_conversation_id`` keeps its files."""

    def __init__(self, settings: Settings, parent_conversation_id: str, run_id: str) -> None:
        relative = RUNS_PATH.format(conversation=parent_conversation_id, run=run_id)
        self.root = settings.drive_dir
        self.path = settings.drive_dir / relative
        self.uri = f"data://{relative}"

    @staticmethod
    def prepare(settings: Settings, parent_conversation_id: str) -> None:
        """Make the conversation's ``runs`` folder before a child starts, so that a link
        planted on the way refuses the delegate call instead of a write after the start."""
        runs = RUNS_PATH.format(conversation=parent_conversation_id, run="").rstrip("/")
        make_folders(settings.drive_dir, settings.drive_dir / runs, mode=0o700)

    @property
    def status_uri(self) -> str:
        return f"{self.uri}/meta.json"

    @property
    def transcript_uri(self) -> str:
        return f"{self.uri}/messages.jsonl"

    def append(self, rows: Sequence[TimelineRow]) -> None:
        """Add rows to the transcript as the run stores them (the end rewrites it whole)."""
        lines = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows)
        append_file(self.root, self.path / "messages.jsonl", lines.encode("utf-8"), mode=0o600)

    async def write_meta(self, meta: Mapping[str, Any]) -> None:
        body = json.dumps(dict(meta), indent=2, ensure_ascii=False, default=str) + "\n"
        await asyncio.to_thread(write_text_atomically, self.root, self.path / "meta.json", body)

    async def write(self, meta: Mapping[str, Any], rows: Sequence[TimelineRow]) -> None:
        lines = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows)
        body = json.dumps(dict(meta), indent=2, ensure_ascii=False, default=str) + "\n"
        await asyncio.to_thread(self._write_files, body, lines)

    def _write_files(self, meta: str, messages: str) -> None:
        write_text_atomically(self.root, self.path / "messages.jsonl", messages)
        write_text_atomically(self.root, self.path / "meta.json", meta)
