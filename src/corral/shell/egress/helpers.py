"""The network of a helper process (a command hook) under the shell's egress policy.

A helper keeps the host's file view and identity rules (:mod:`corral.shell.launcher`); what
changes is its network: bubblewrap gives it a namespace of its own (``--unshare-net`` over
``--dev-bind / /``), and, when the egress policy allows some domain, the egress bridge puts
the platform's proxy on ``127.0.0.1:3128`` inside it, exactly as for a sandboxed command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from corral.shell.egress.bridge import EgressBridge, proxy_environment
from corral.shell.egress.log import EgressStore

__all__ = ["HelperNetwork"]


class HelperNetwork:
    """One helper run's network: wrap its argv, pass what it inherits, then finish."""

    def __init__(
        self,
        bwrap: str,
        *,
        bridge: EgressBridge | None,
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

    def wrap(self, argv: Sequence[str], cwd: str) -> list[str]:
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

    async def finish(self) -> None:
        """Close the proxy and store its connections (after the helper ended)."""
        if self.bridge is not None:
            await self.bridge.close()
            await self._store.save(self.bridge.proxy.log)
