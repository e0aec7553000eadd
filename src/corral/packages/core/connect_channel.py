"""What ``connect`` asks of the channels for kind ``channel``.

The channels sit above the packages, so the built-in package declares the shape it calls
and the channels provide it (``corral.channels.ChannelKind``), found on ``ctx.services``
under this type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corral.policy.identity import Caller

__all__ = ["ChannelConnect"]


class ChannelConnect:
    """The ``channel`` kind of ``connect``: check a step, apply it, list the connections.

    A base class, not a protocol, because services are found by type
    (``ctx.services.get(ChannelConnect)``), which needs a concrete class."""

    def check(self, verb: str, name: str, item: Mapping[str, Any], caller: Caller) -> None:
        """Raise for anything wrong with one step; writes nothing."""
        raise NotImplementedError

    async def apply(
        self, verb: str, name: str, item: Mapping[str, Any], caller: Caller
    ) -> dict[str, Any]:
        """Run one checked step; returns its projection."""
        raise NotImplementedError

    async def list(self, caller: Caller) -> dict[str, Any]:
        """The connections and the descriptors of what can be connected."""
        raise NotImplementedError
