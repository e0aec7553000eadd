"""The roots an MCP server is told: the folders the calling user may use, one set at a time.

A server holds one list of roots (``roots/list``) but serves every user of the project, and
each user's URI policies give them other folders. :class:`RootsGate` lets calls that need
the same roots run together; a call that needs others waits until those have finished, then
the new roots are announced (``notifications/roots/list_changed``) before it goes ahead. A
server is never told one user's folders while it works for another.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy

__all__ = ["Roots", "RootsGate", "roots_for"]

Roots = tuple[str, ...]
"""``file://`` URIs, sorted."""


def roots_for(caller: Caller, sources: SourcePolicy) -> Roots:
    """The folders of every source ``caller`` may read or write, as ``file://`` URIs."""
    folders: Iterable[Path] = (
        source.real_root
        for source in sources.sources.values()
        if source.rights_for(caller) & {"read", "write"}
    )
    return tuple(sorted({folder.as_uri() for folder in folders if folder.is_absolute()}))


class RootsGate:
    """Calls run under one set of roots at a time; ``announce`` tells the server of a change."""

    def __init__(
        self, announce: Callable[[Roots], Awaitable[None]], *, initial: Roots = ()
    ) -> None:
        self.current: Roots = initial
        self._announce = announce
        self._running = 0
        self._turn = asyncio.Condition()

    @asynccontextmanager
    async def using(self, roots: Roots | None) -> AsyncIterator[None]:
        """Hold ``roots`` (None: whatever is current) for the length of the block."""
        async with self._turn:
            if roots is not None:
                while roots != self.current and self._running:
                    await self._turn.wait()
                if roots != self.current:
                    self.current = roots
                    await self._announce(roots)
            self._running += 1
        try:
            yield
        finally:
            async with self._turn:
                self._running -= 1
                self._turn.notify_all()
