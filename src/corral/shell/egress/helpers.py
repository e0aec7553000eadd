"""The network of a helper process (a command hook) under the shell's egress policy.

A helper keeps the host's file view and identity rules (:mod:`corral.shell.launcher`); what
changes is its network: bubblewrap gives it a namespace of its own (``--unshare-net`` over
``--dev-bind / /``), and, when the egress policy allows some domain, the egress bridge puts
the platform's proxy on ``127.0.0.1:3128`` inside it, exactly as for a sandboxed command.
On the Landlock tier (no ``bwrap``) the helper shares the host's network, so its launcher
(:func:`corral.shell.launcher.with_network`) holds its TCP connect to the port of its own
:class:`~corral.shell.egress.loopback.LoopbackProxy` (or to none) and refuses other sockets.
A helper may live long (an MCP server): its connections are stored as they happen, in
batches every :data:`SYNC_SECONDS`, not only when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence

from corral.shell.egress.bridge import EgressBridge, proxy_environment
from corral.shell.egress.log import EgressStore
from corral.shell.egress.loopback import LoopbackProxy
from corral.shell.launcher import with_network

__all__ = ["SYNC_SECONDS", "HelperNetwork"]

SYNC_SECONDS = 1.0
"""How often a live helper's new and changed connections are stored."""

log = logging.getLogger("corral.shell.egress")


class HelperNetwork:
    """One helper run's network: wrap its argv, pass what it inherits, then finish."""

    def __init__(
        self,
        bwrap: str | None,
        *,
        bridge: EgressBridge | LoopbackProxy | None,
        store: EgressStore,
        label: str,
        trust: Mapping[str, str] | None = None,
    ) -> None:
        self._bwrap = bwrap
        self._trust = dict(trust or {})
        """The variables that make it trust the proxy's CA (for intercepted domains)."""
        self.bridge = bridge
        self._store = store
        self.label = label
        """What the helper's network is, as a shell call's result says it."""
        self._syncing: asyncio.Task[None] | None = None
        self._ended = asyncio.Event()

    def wrap(self, argv: Sequence[str], cwd: str) -> list[str]:
        if self._bwrap is None:  # the Landlock tier: the spawner's cwd stands
            return with_network(argv, None if self.bridge is None else self.bridge.port)
        inner = list(argv) if self.bridge is None else self.bridge.wrap(argv)
        # As root bubblewrap needs no user namespace; otherwise it makes one of its own.
        return [self._bwrap, "--unshare-net", "--die-with-parent", "--dev-bind", "/", "/",
                "--chdir", cwd, "--", *inner]  # fmt: skip

    @property
    def env(self) -> dict[str, str]:
        if self.bridge is None:
            return {}
        return {**proxy_environment(self.bridge.port), **self._trust}

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return () if self.bridge is None else self.bridge.pass_fds

    def spawned(self) -> None:
        if self.bridge is not None:
            self.bridge.spawned()
            self._syncing = asyncio.get_running_loop().create_task(self._sync_while_alive())

    async def _sync_while_alive(self) -> None:
        assert self.bridge is not None
        while not self._ended.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended.wait(), SYNC_SECONDS)
            try:
                await self._store.sync(self.bridge.proxy.log)
            except Exception:  # the store is away for a moment: the next round tries again
                log.exception("storing a helper's egress connections failed")

    async def finish(self) -> None:
        """Close the proxy and store the rest of its connections (after the helper ended)."""
        if self._syncing is not None:
            # Not cancelled: a sync cut off inside its transaction would lose rows.
            self._ended.set()
            await asyncio.shield(self._syncing)
        if self.bridge is not None:
            await self.bridge.close()
            await self._store.sync(self.bridge.proxy.log)
