"""A delegate run's folder under its parent conversation: ``meta.json`` and
``messages.jsonl`` (one timeline row a line), in the project drive so that whoever may read
``data://`` reads them with the platform's own read path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from corral.files import write_text_atomically
from corral.runtime.timeline import TimelineRow
from corral.settings import Settings

__all__ = ["RunFolder"]

RUNS_PATH = ".corral/conversations/{conversation}/runs/{run}"


class RunFolder:
    """Where one delegate run of ``parent_conversation_id`` keeps its files."""

    def __init__(self, settings: Settings, parent_conversation_id: str, run_id: str) -> None:
        relative = RUNS_PATH.format(conversation=parent_conversation_id, run=run_id)
        self.path = settings.drive_dir / relative
        self.uri = f"data://{relative}"

    @property
    def status_uri(self) -> str:
        return f"{self.uri}/meta.json"

    @property
    def transcript_uri(self) -> str:
        return f"{self.uri}/messages.jsonl"

    def append(self, rows: Sequence[TimelineRow]) -> None:
        """Add rows to the transcript as the run stores them (the end rewrites it whole)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / "messages.jsonl").open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows)

    async def write_meta(self, meta: Mapping[str, Any]) -> None:
        body = json.dumps(dict(meta), indent=2, ensure_ascii=False, default=str) + "\n"
        await asyncio.to_thread(write_text_atomically, self.path / "meta.json", body)

    async def write(self, meta: Mapping[str, Any], rows: Sequence[TimelineRow]) -> None:
        lines = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows)
        body = json.dumps(dict(meta), indent=2, ensure_ascii=False, default=str) + "\n"
        await asyncio.to_thread(self._write_files, body, lines)

    def _write_files(self, meta: str, messages: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.path / "messages.jsonl", messages)
        write_text_atomically(self.path / "meta.json", meta)
