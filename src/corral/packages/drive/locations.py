"""Where a drive tool's URI leads, and whether this caller may use it that way.

Every target goes through the platform's one source resolution (:class:`SourcePolicy`, the
same the execute gate uses): ``..`` and symlinks are resolved before matching, a path no
source covers is denied, the platform's own files (database, keys, settings) are denied.

On top of that the drive knows the platform's durable URIs, each resolved only for its owner:

- ``corral://shells/<id>`` (a background shell's status) and ``corral://shells/<id>/output``
  (its JSONL log) for the person who started the shell (or may read its conversation);
- ``data://.corral/conversations/<parent>/runs/<run>/meta.json`` and ``messages.jsonl`` (a
  delegate run's status and transcript) for the run's owner.

Everything else under ``data://.corral/`` is the platform's private area and denied, however
it is spelled (relative path, absolute path, a symlink into it, other letter case).
Durable URIs are read-only.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound, PolicyDenied
from corral.policy.identity import Caller
from corral.policy.sources import Access, ResolvedPath, SourcePolicy
from corral.store import runtime_tables as rt_tables
from corral.tools.services import Shells

__all__ = ["PRIVATE_AREA", "Location", "Locator", "in_private_area"]

PRIVATE_AREA = ".corral"
"""The platform's folder inside the project drive."""

_SHELL_URI = re.compile(r"^corral://shells/([A-Za-z0-9_]{1,64})(/output)?/?$", re.IGNORECASE)
_RUN_FILES = frozenset({"meta.json", "messages.jsonl"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """A resolved drive target: a real file or folder, or a document the platform renders."""

    target: str
    """As the caller wrote it."""
    uri: str
    """How results name it (a source URI where one covers it)."""
    path: Path | None
    """The real path; None for a rendered document."""
    root: Path | None = None
    """The real root of the source covering ``path``: writes go from it, never through a
    link below it (:mod:`corral.files`)."""
    document: str | None = None
    """The text of a rendered document (a shell's status)."""
    durable: bool = False
    """A platform file reached through its owner-checked URI: readable only, by reference
    never (its bytes are not under a source)."""


def in_private_area(path: Path, drive_root: Path) -> tuple[str, ...] | None:
    """The parts below ``<drive>/.corral`` when ``path`` lies there (letter case ignored,
    since a case-insensitive volume would serve the same files), else None."""
    area = str(drive_root / PRIVATE_AREA).casefold()
    text = str(path).casefold()
    if text == area:
        return ()
    if not text.startswith(area + "/"):
        return None
    return tuple(str(path)[len(area) + 1 :].split("/"))


def _denied(message: str, rule: str, target: str) -> PolicyDenied:
    return PolicyDenied(message, data={"target": target, "rule": rule})


class Locator:
    """Resolves drive targets for one platform; owner checks read the store."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def locate(
        self,
        target: str,
        *,
        caller: Caller,
        access: Access,
        sources: SourcePolicy,
        shells: Shells | None,
    ) -> Location:
        """Resolve ``target`` and require ``access`` on it; raise PolicyDenied otherwise."""
        if target.lower().startswith("corral://"):
            return await self._shell(target, caller, access, shells)
        resolved = sources.resolve(target)
        private = in_private_area(resolved.path, sources.data_root)
        if private is not None:  # protected for every source; run files are owner-checked
            return await self._run_file(resolved, private, caller, access)
        sources.require(caller, resolved, access)
        root = resolved.source.real_root if resolved.source is not None else None
        return Location(target=target, uri=resolved.uri, path=resolved.path, root=root)

    async def _shell(
        self, target: str, caller: Caller, access: Access, shells: Shells | None
    ) -> Location:
        match = _SHELL_URI.match(target)
        if match is None:
            raise _denied(
                f"{target!r} is not a platform URI the drive knows; the known ones are "
                "corral://shells/ID (a background shell's status) and corral://shells/ID/output "
                "(its log), as execute returned them",
                "unknown_uri",
                target,
            )
        if access != "read":
            raise _denied(
                f"{target!r} is a durable platform URI and is read-only; write somewhere under "
                "data:// instead",
                "read_only",
                target,
            )
        if shells is None:
            raise _denied(
                "background shells are not installed on this platform", "unavailable", target
            )
        shell_id = match.group(1)
        try:
            record = await shells.background.readable(shell_id, caller)
        except NotFound:
            raise _denied(
                f"no background shell {shell_id!r} that you may read: a shell's status and log "
                "are only for the person who started it",
                "owner",
                target,
            ) from None
        if match.group(2):
            # Opened and checked as a real path.
            log = Path(await asyncio.to_thread(os.path.realpath, record.log_path))
            return Location(target=target, uri=record.output_uri, path=log, durable=True)
        document = json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n"
        return Location(target=target, uri=record.status_uri, path=None, document=document)

    async def _run_file(
        self, resolved: ResolvedPath, parts: tuple[str, ...], caller: Caller, access: Access
    ) -> Location:
        target = resolved.target
        private = (
            f"{target!r} lies in the platform's private area (data://{PRIVATE_AREA}/); only a "
            "subagent run's statusUri and transcriptUri are readable there, by the run's owner"
        )
        is_run_file = (
            len(parts) == 5
            and parts[0] == "conversations"
            and parts[2] == "runs"
            and parts[4] in _RUN_FILES
        )
        if not is_run_file:
            raise _denied(private, "private_area", target)
        if access != "read":
            raise _denied(
                f"{target!r} is a subagent run's durable file and is read-only; write "
                "somewhere else under data://",
                "read_only",
                target,
            )
        if not await self._owns_run(caller, parent=parts[1], run_id=parts[3]):
            raise _denied(
                f"{target!r} belongs to a subagent run you did not start; a run's status and "
                "transcript are only for its owner",
                "owner",
                target,
            )
        uri = f"data://{PRIVATE_AREA}/" + "/".join(parts)
        return Location(target=target, uri=uri, path=resolved.path, durable=True)

    async def _owns_run(self, caller: Caller, *, parent: str, run_id: str) -> bool:
        from corral.store import delegation_tables as dt  # the table loads with its first use

        query = (
            select(rt_tables.Run.user_id)
            .join(dt.Delegation, dt.Delegation.conversation_id == rt_tables.Run.conversation_id)
            .where(rt_tables.Run.id == run_id, dt.Delegation.parent_conversation_id == parent)
        )
        async with self._sessions() as session:
            owner = await session.scalar(query)
        return owner is not None and owner == caller.user_id
