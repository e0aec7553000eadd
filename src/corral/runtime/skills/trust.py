"""Who may see a skill from the shared drive: trust bound to the bundle's content.

Anyone with drive write can put a bundle in ``data://skills/``; listed to everyone, it
would steer every user's agent (and run with their own credentials). So a drive skill
appears to a user only when its exact content is trusted: by an administrator (holding
``admin.settings``) for the whole project, or by that user for themselves (the author
trusting their own skill). A trust names the SHA-256 of every file in the bundle, scripts
included: an edit by anyone makes it a new, untrusted bundle until someone trusts it again.
Skills an operator installed (packages, ``skill_paths``) need no trust.

Records live in the platform's private folder, outside the drive, so no drive writer can
forge one.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from corral.files import write_text_atomically

__all__ = ["SkillTrust", "bundle_digest"]

PROJECT = "*"
"""The record key of trusts an administrator gave for everyone."""


def bundle_digest(folder: Path) -> str | None:
    """SHA-256 over every file of the bundle, names included; None when the bundle holds
    a symbolic link or something that is neither a file nor a folder (never trusted)."""
    digest = hashlib.sha256()
    try:
        for current, folders, files in os.walk(folder):
            folders.sort()
            for name in sorted([*folders, *files]):
                path = os.path.join(current, name)
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                    return None
                if stat.S_ISREG(mode):
                    relative = os.path.relpath(path, folder)
                    with open(path, "rb") as handle:
                        content = handle.read()
                    digest.update(f"{relative}\0{len(content)}\0".encode())
                    digest.update(content)
    except OSError:
        return None
    return digest.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Trusted:
    name: str
    digest: str
    scope: str
    """``project`` (an administrator's) or ``user``."""


class SkillTrust:
    """Trust records: ``{who: {skill name: digest}}``, ``who`` a user id or ``*``."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            found = json.loads(self._path.read_text())
        except FileNotFoundError:
            return {}
        return found if isinstance(found, dict) else {}

    def trusts(self, name: str, digest: str | None, user_id: str | None) -> bool:
        """Whether the bundle ``name`` with content ``digest`` is trusted for ``user_id``."""
        if digest is None:
            return False
        records = self._read()
        return any(
            records.get(who, {}).get(name) == digest
            for who in (PROJECT, user_id)
            if who is not None
        )

    def trust(self, name: str, digest: str, *, user_id: str, project: bool) -> Trusted:
        """Record the trust; ``project`` for everyone (the caller checked the right)."""
        records = self._read()
        who = PROJECT if project else user_id
        records.setdefault(who, {})[name] = digest
        self._path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(
            self._path.parent, self._path, json.dumps(records, indent=1, sort_keys=True)
        )
        return Trusted(name=name, digest=digest, scope="project" if project else "user")
