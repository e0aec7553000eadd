"""Opening the proxy's upstream connection: DNS resolved here, web_fetch's address rules.

The sandbox never resolves a name: the proxy does, then checks every address the name
resolved to with the same judgement web_fetch uses (no loopback, private, link-local or
metadata address) unless an admin allowed the host by name (``allowed_private_hosts``).
The judgement and the resolver are handed in by the platform (the web layer owns them);
tests add a name mapping with :meth:`UpstreamConnector.unsafe_mapping`, whose names alone
skip the address rules.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from ipaddress import IPv4Address, IPv6Address, ip_address

from corral.shell.egress.policy import EgressPolicy, normalise_host

__all__ = ["AddressJudge", "NameResolver", "UpstreamConnector", "UpstreamRefused", "resolve"]

IPAddress = IPv4Address | IPv6Address
AddressJudge = Callable[[IPAddress], str | None]
"""Why a connection to an address is refused, or None (web_fetch's ``AddressRules.refusal``)."""
NameResolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]
CONNECT_SECONDS = 10.0


class UpstreamRefused(Exception):
    """The upstream connection is not made: ``rule`` names why for the connection log."""

    def __init__(self, reason: str, *, rule: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


async def resolve(host: str, port: int) -> Sequence[IPAddress]:
    """The system resolver (``getaddrinfo`` off the loop), addresses deduplicated."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    seen: list[IPAddress] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            address = ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in seen:
                seen.append(address)
    return seen


class UpstreamConnector:
    def __init__(
        self,
        *,
        judge: AddressJudge,
        resolver: NameResolver = resolve,
        timeout: float = CONNECT_SECONDS,
    ) -> None:
        self._judge = judge
        self._resolver = resolver
        self._timeout = timeout
        self._mapped: dict[str, IPAddress] = {}

    @classmethod
    def unsafe_mapping(
        cls,
        names: Mapping[str, str],
        *,
        judge: AddressJudge,
        resolver: NameResolver = resolve,
        timeout: float = CONNECT_SECONDS,
    ) -> UpstreamConnector:
        """A connector where ``names`` resolve to the given addresses past the address
        rules; for tests with loopback stand-ins, and for nothing a setting can reach."""
        connector = cls(judge=judge, resolver=resolver, timeout=timeout)
        connector._mapped = {normalise_host(k): ip_address(v) for k, v in names.items()}
        return connector

    async def addresses(self, host: str, port: int, policy: EgressPolicy) -> list[IPAddress]:
        """Where ``host`` may be reached; raises :class:`UpstreamRefused` with the reason."""
        name = normalise_host(host)
        if name in self._mapped:
            return [self._mapped[name]]
        try:
            found = list(await asyncio.wait_for(self._resolver(name, port), self._timeout))
        except (OSError, TimeoutError, UnicodeError) as exc:
            raise UpstreamRefused(f"{name} does not resolve ({exc})", rule="dns_failure") from None
        if not found:
            raise UpstreamRefused(f"{name} resolves to no address", rule="dns_failure")
        if any(_named(name, p) for p in policy.allowed_private_hosts):
            return found
        for address in found:
            why = self._judge(address)
            if why is not None:
                raise UpstreamRefused(
                    f"{name} resolves to {address}, which is {why}; an admin may allow the "
                    "host by name in egress.allowed_private_hosts",
                    rule="blocked_address",
                )
        return found

    async def open(
        self, host: str, port: int, policy: EgressPolicy
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to the first reachable address ``host`` may be reached at."""
        last = "no address"
        for address in await self.addresses(host, port, policy):
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(str(address), port), self._timeout
                )
            except (OSError, TimeoutError) as exc:
                last = f"{address}: {exc or 'timed out'}"
        raise UpstreamRefused(f"could not connect to {host}:{port} ({last})", rule="unreachable")


def _named(name: str, pattern: str) -> bool:
    return name.endswith(pattern[1:]) if pattern.startswith("*.") else name == pattern
