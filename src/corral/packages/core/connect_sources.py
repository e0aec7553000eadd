"""Sources registered through connect: a local folder becomes a source for a caller who holds
``sources.mount``, under the realpath rules every source path obeys.

The root must be an absolute path to an existing folder once every link is followed; it may
not be the file system's root, nor lie inside the platform's own files (the data folder's
private area, the key file…), and no other source may already have that real root. Files of
the platform below a new root stay protected as they are everywhere. The caller gets the
rights they asked for (``r`` by default) on the new source; an administrator grants others.
"""

from __future__ import annotations

import os
from pathlib import Path

from corral.errors import InvalidArguments
from corral.kernel import Kernel
from corral.policy.sources import SourcePolicy

__all__ = ["SourceMounts"]

RIGHTS = ("r", "rw")


class SourceMounts:
    """Registers sources for the connect control plane."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel

    def check(self, name: str, root: str, rights: str, policy: SourcePolicy) -> None:
        """Refuse a root or rights that cannot be registered, before anything is written.
        Messages never show the path (a model reads them)."""
        if rights not in RIGHTS:
            raise InvalidArguments(f"fields.rights is {rights!r}; use 'r' or 'rw'")
        if policy.source(name) is not None:
            raise InvalidArguments("a source by that name exists; pick another name")
        if not root or "\x00" in root or not Path(root).is_absolute():
            raise InvalidArguments("fields.root must be the absolute path of a folder")
        real = Path(real_root(root))
        if not real.is_dir():
            raise InvalidArguments("fields.root is not an existing folder (after links)")
        if real == Path(real.anchor):
            raise InvalidArguments("the file system's root cannot be a source")
        if policy.is_protected(str(real)):
            raise InvalidArguments("that folder holds the platform's own files")
        if any(source.real_root == real for source in policy.sources.values()):
            raise InvalidArguments("that folder is already a source")

    async def add(self, name: str, root: str, *, user_id: str, rights: str) -> None:
        real = real_root(root)
        admin = self._kernel.admin
        await admin.add_source(name, real, description="registered through connect")
        await admin.grant_source(name, principal_kind="user", principal=user_id, rights=rights)

    async def policy(self) -> SourcePolicy:
        """The sources as they stand now (a call's own view predates what it registered)."""
        return (await self._kernel.config.dispatch_state()).sources


def real_root(root: str) -> str:
    """Where ``root`` leads once every link is followed: what is stored and checked."""
    return os.path.realpath(root)
