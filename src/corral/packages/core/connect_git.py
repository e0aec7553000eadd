"""Git remotes through connect: named remotes of repositories in the project drive.

``add`` writes the remote into the repository's own config file with ``git config --file``
(no repository code runs: no hooks, no fsmonitor) and records the connection with the name of
the stored credential meant for it; ``remove`` takes both out again; ``check`` reports only
local configuration — the remote's URL as configured, whether the named credential holds a
value for the caller, and when the repository last fetched — and never claims the vendor is
healthy. A URL carrying a user or password is refused: secrets belong in a credential.
An https remote (http on loopback only) with a credential also gets the platform's credential helper
(:mod:`corral.packages.core.git_credentials`), which ``execute`` feeds for one call at a time.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete, select

from corral.connect import CredentialStore
from corral.connect.credentials import NAME_PATTERN
from corral.errors import InvalidArguments, ToolError
from corral.kernel import Kernel
from corral.packages.core.git_credentials import helper_command, helper_url
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.store import connect_tables as ct

__all__ = ["GitRemotes"]

SCHEMES = ("https", "http", "ssh", "git", "file")
DRIVE = "data"


class GitRemotes:
    """The project's git remotes."""

    def __init__(self, kernel: Kernel, credentials: CredentialStore | None) -> None:
        self._kernel = kernel
        self._credentials = credentials

    def check_add(self, item: dict[str, Any], caller: Caller, policy: SourcePolicy) -> Path:
        """Refuse what cannot be added, before anything is written; the repository's folder."""
        unexpected = sorted(set(item) - {"kind", "name", "url", "fields"})
        fields = dict(item.get("fields") or {})
        repo, credential = fields.pop("repo", ""), fields.pop("credential", "")
        if unexpected or fields:
            raise InvalidArguments(
                "a git remote takes 'url' and fields 'repo' (a data:// folder) and 'credential'"
            )
        url = str(item.get("url", ""))
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES or not (parts.hostname or parts.scheme == "file"):
            raise InvalidArguments(f"'url' must be a {', '.join(SCHEMES)} URL with a host")
        if parts.password or (parts.username and parts.scheme in ("https", "http")):
            raise InvalidArguments(
                "the url must not carry a user or password: store the token as a credential "
                "and name it in fields.credential"
            )
        if credential and not NAME_PATTERN.match(credential):
            raise InvalidArguments("fields.credential must be a credential's name")
        if not repo.startswith(f"{DRIVE}://"):
            raise InvalidArguments("fields.repo must be a folder of the project drive (data://…)")
        resolved = policy.check(caller, repo, "write")
        if resolved.source is None or resolved.source.name != DRIVE:
            raise InvalidArguments("fields.repo must be a folder of the project drive (data://…)")
        git_dir, config = resolved.path / ".git", resolved.path / ".git" / "config"
        if git_dir.is_symlink() or config.is_symlink():
            raise InvalidArguments(
                "fields.repo's .git or .git/config is a symbolic link; the platform edits only "
                "a repository's own config file: replace the link with the file"
            )
        if not config.is_file():
            raise InvalidArguments("fields.repo is not a git repository (no .git/config)")
        return resolved.path

    async def add(
        self, name: str, item: dict[str, Any], folder: Path, *, created_by: str
    ) -> dict[str, Any]:
        fields = item.get("fields") or {}
        async with self._kernel.sessions() as session:
            if await session.get(ct.GitRemote, name) is not None:
                raise ToolError(
                    "a git remote by that name is connected; remove it first", code="conflict"
                )
        config = str(folder / ".git" / "config")
        current = await self._git("config", "--file", config, "--get", f"remote.{name}.url")
        if current is not None:
            raise ToolError(
                "the repository already has a remote by that name; pick another name",
                code="conflict",
            )
        url = str(item["url"])
        await self._git("config", "--file", config, f"remote.{name}.url", url, strict=True)
        refspec = f"+refs/heads/*:refs/remotes/{name}/*"
        await self._git("config", "--file", config, f"remote.{name}.fetch", refspec, strict=True)
        if fields.get("credential") and helper_url(url):
            # The token itself reaches git only through execute's staged variable.
            helper = helper_command(name)
            await self._git(
                "config", "--file", config, f"credential.{url}.helper", helper, strict=True
            )
        async with self._kernel.sessions.begin() as session:
            session.add(
                ct.GitRemote(
                    name=name,
                    repo=str(fields["repo"]),
                    url=url,
                    credential=str(fields.get("credential", "")),
                    created_by=created_by,
                )
            )
        return {"state": "configured", "repo": str(fields["repo"]), "url": url}

    async def remove(self, name: str, policy: SourcePolicy) -> dict[str, Any]:
        row = await self._row(name)
        folder = policy.resolve(row.repo).path
        config = folder / ".git" / "config"
        if config.is_file():
            await self._git("config", "--file", str(config), "--remove-section", f"remote.{name}")
            await self._git(
                "config", "--file", str(config), "--remove-section", f"credential.{row.url}"
            )
        async with self._kernel.sessions.begin() as session:
            await session.execute(delete(ct.GitRemote).where(ct.GitRemote.name == name))
        return {"state": "removed"}

    async def check(self, name: str, caller: Caller, policy: SourcePolicy) -> dict[str, Any]:
        """Local configuration only; nothing here contacts the remote."""
        row = await self._row(name)
        folder = policy.resolve(row.repo).path
        config = folder / ".git" / "config"
        configured = (
            await self._git("config", "--file", str(config), "--get", f"remote.{name}.url")
            if config.is_file()
            else None
        )
        fetched = folder / ".git" / "FETCH_HEAD"
        last = (
            datetime.fromtimestamp(fetched.stat().st_mtime, UTC).isoformat()
            if fetched.is_file()
            else None
        )
        helper = (
            await self._git(
                "config", "--file", str(config), "--get", f"credential.{row.url}.helper"
            )
            if config.is_file()
            else None
        )
        has_value = False
        if row.credential and self._credentials is not None:
            found = await self._credentials.lookup(row.credential, user_id=caller.user_id)
            has_value = found is not None
        return {
            "state": "configured" if configured else "missing_from_repository",
            "repo": row.repo,
            "url": configured or row.url,
            "credential": row.credential or None,
            "credentialHasValue": has_value,
            "credentialHelper": helper == helper_command(name),
            "lastFetch": last,
            "note": "local configuration only; the remote itself was not contacted",
        }

    async def rows(self) -> list[dict[str, Any]]:
        async with self._kernel.sessions() as session:
            found = await session.scalars(select(ct.GitRemote).order_by(ct.GitRemote.name))
            return [
                {"name": r.name, "repo": r.repo, "url": r.url, "credential": r.credential or None}
                for r in found
            ]

    async def _git(self, *args: str, strict: bool = False) -> str | None:
        # As the sandbox uid, the drive's owner: the repository is the sandbox's to shape
        # (a link planted as .git/config), so root must not write it.
        uid = self._kernel.settings.sandbox_uid if os.geteuid() == 0 else None
        return await _run_git(args, strict=strict, uid=uid)

    async def _row(self, name: str) -> ct.GitRemote:
        async with self._kernel.sessions() as session:
            row = await session.get(ct.GitRemote, name)
        if row is None:
            raise ToolError("no git remote by that name is connected", code="not_found")
        return row


async def _run_git(args: tuple[str, ...], *, strict: bool, uid: int | None) -> str | None:
    """Run git with no system or user configuration, as ``uid`` when given; stdout, or None
    when it failed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    env["HOME"] = env["XDG_CONFIG_HOME"] = "/nonexistent"
    process = await asyncio.create_subprocess_exec(
        "git",
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd="/",
        user=uid,
        group=uid,
        extra_groups=None if uid is None else [],
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        if strict:
            # git's own message names the config file: a path the model must not see.
            writer = "" if uid is None else f" by uid {uid}, the sandbox's, that commands run as"
            raise ToolError(
                f"git could not write the remote (exit {process.returncode}); check that the "
                f"repository's .git folder and config are writable{writer}, and that the config "
                "is well formed",
                code="git_failed",
            )
        return None
    return out.decode(errors="replace").strip()
