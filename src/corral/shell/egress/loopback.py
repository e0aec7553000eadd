"""The egress proxy on the host's loopback, for the Landlock tier.

A Landlock-tier command shares the host's network namespace, so nothing can be bridged into
a namespace of its own: each call's proxy listens on an ephemeral port of ``127.0.0.1``
instead, and the command's Landlock rules (ABI 4, ``LANDLOCK_ACCESS_NET_CONNECT_TCP``) let
its TCP connect reach that port only, its seccomp filter lets it make TCP sockets only (no
UDP, so no DNS of its own) and TCP bind is refused. Landlock's network rules name a port,
not an address: a connect to that port number on any address passes the rule (what
listens there elsewhere is not ours to judge).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Sequence

from corral.shell.egress.proxy import EgressProxy

__all__ = ["LoopbackProxy"]


class LoopbackProxy:
    """One call's proxy on ``127.0.0.1:<port>``: the same surface as the egress bridge."""

    pass_fds: tuple[int, ...] = ()

    def __init__(self, proxy: EgressProxy) -> None:
        self.proxy = proxy
        # Listening from now on: the command's first connections wait in the backlog
        # until :meth:`spawned` starts serving.
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._task: asyncio.Task[None] | None = None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def spawned(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.proxy.serve(self._listener))

    async def close(self) -> None:
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        await self.proxy.close()
        self._listener.close()
