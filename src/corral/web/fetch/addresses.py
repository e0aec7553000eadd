"""Which IP addresses a fetch may connect to.

Only public unicast addresses are reachable. :func:`non_public_reason` names the range an
address falls in when it is not public; :class:`AddressRules` applies that judgement, an
administrator's extra denials, and — only when built with the deliberately named
:meth:`AddressRules.unsafe_allowing` — exemptions for tests.

IPv4 embedded in IPv6:

* IPv4-mapped ``::ffff:a.b.c.d`` and the NAT64 well-known prefix ``64:ff9b::/96`` have
  legitimate public uses (dual-stack resolvers return mapped answers; DNS64 networks
  synthesise NAT64 ones), so they are judged by the embedded IPv4 address. A mapped
  address is connected to as plain IPv4.
* IPv4-compatible ``::/96``, IPv4-translated ``::ffff:0:0:0/96``, 6to4 ``2002::/16``,
  Teredo ``2001::/32`` and the local-use NAT64 prefix ``64:ff9b:1::/48`` are refused whole:
  they are deprecated or operator-specific tunnel forms, no public site is reachable only
  through them, and their embeddings (Teredo's obfuscated client, NAT64's variable prefix
  lengths) are easy to misjudge.
* Any other IPv6 address must lie in global unicast ``2000::/3``.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_network

__all__ = [
    "AddressRules",
    "IPAddress",
    "IPNetwork",
    "connect_form",
    "non_public_reason",
    "parse_networks",
]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network


def _v4(cidr: str) -> IPv4Network:
    return IPv4Network(cidr)


def _v6(cidr: str) -> IPv6Network:
    return IPv6Network(cidr)


_IPV4_RANGES: tuple[tuple[IPv4Network, str], ...] = (
    (_v4("0.0.0.0/8"), "'this network' (0.0.0.0/8, includes the unspecified 0.0.0.0)"),
    (_v4("10.0.0.0/8"), "private (10.0.0.0/8)"),
    (_v4("100.64.0.0/10"), "carrier-grade NAT (100.64.0.0/10)"),
    (_v4("127.0.0.0/8"), "loopback (127.0.0.0/8)"),
    (_v4("169.254.0.0/16"), "link-local, home of cloud metadata services (169.254.0.0/16)"),
    (_v4("172.16.0.0/12"), "private (172.16.0.0/12)"),
    (_v4("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"),
    (_v4("192.0.2.0/24"), "documentation TEST-NET-1 (192.0.2.0/24)"),
    (_v4("192.31.196.0/24"), "AS112 service (192.31.196.0/24)"),
    (_v4("192.52.193.0/24"), "AMT relay (192.52.193.0/24)"),
    (_v4("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)"),
    (_v4("192.168.0.0/16"), "private (192.168.0.0/16)"),
    (_v4("192.175.48.0/24"), "AS112 direct delegation (192.175.48.0/24)"),
    (_v4("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"),
    (_v4("198.51.100.0/24"), "documentation TEST-NET-2 (198.51.100.0/24)"),
    (_v4("203.0.113.0/24"), "documentation TEST-NET-3 (203.0.113.0/24)"),
    (_v4("224.0.0.0/4"), "multicast (224.0.0.0/4)"),
    (_v4("255.255.255.255/32"), "limited broadcast (255.255.255.255)"),
    (_v4("240.0.0.0/4"), "reserved (240.0.0.0/4)"),
)

_IPV6_MAPPED = _v6("::ffff:0:0/96")
_IPV6_NAT64 = _v6("64:ff9b::/96")

_IPV6_RANGES: tuple[tuple[IPv6Network, str], ...] = (
    (_v6("::/128"), "unspecified (::)"),
    (_v6("::1/128"), "loopback (::1)"),
    (_v6("::/96"), "IPv4-compatible, deprecated (::/96)"),
    (_v6("::ffff:0:0:0/96"), "IPv4-translated (::ffff:0:0:0/96)"),
    (_v6("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"),
    (_v6("100::/64"), "discard-only (100::/64)"),
    (_v6("2001::/32"), "Teredo tunnelling (2001::/32)"),
    (_v6("2001:db8::/32"), "documentation (2001:db8::/32)"),
    (_v6("2001::/23"), "IETF protocol assignments (2001::/23)"),
    (_v6("2002::/16"), "6to4 tunnelling (2002::/16)"),
    (_v6("3fff::/20"), "documentation (3fff::/20)"),
    (_v6("5f00::/16"), "segment routing (5f00::/16)"),
    (_v6("fc00::/7"), "unique local, private (fc00::/7)"),
    (_v6("fe80::/10"), "link-local (fe80::/10)"),
    (_v6("fec0::/10"), "site-local, deprecated (fec0::/10)"),
    (_v6("ff00::/8"), "multicast (ff00::/8)"),
)

_IPV6_GLOBAL_UNICAST = _v6("2000::/3")


def _ipv4_reason(address: IPv4Address) -> str | None:
    for network, reason in _IPV4_RANGES:
        if address in network:
            return reason
    if not address.is_global:
        return "not globally routable"
    return None


def _embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    if address in _IPV6_MAPPED:
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    if address in _IPV6_NAT64:
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def _ipv6_reason(address: IPv6Address) -> str | None:
    if address.scope_id:
        return f"scoped to the local interface {address.scope_id!r}"
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        inner = _ipv4_reason(embedded)
        if inner is None:
            return None
        form = "IPv4-mapped" if address in _IPV6_MAPPED else "NAT64"
        return f"{form} form of {embedded}, which is {inner}"
    for network, reason in _IPV6_RANGES:
        if address in network:
            return reason
    if address not in _IPV6_GLOBAL_UNICAST:
        return "outside IPv6 global unicast (2000::/3)"
    if not address.is_global:
        return "not globally routable"
    return None


def non_public_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, or ``None`` when it is."""
    if isinstance(address, IPv4Address):
        return _ipv4_reason(address)
    return _ipv6_reason(address)


def connect_form(address: IPAddress) -> IPAddress:
    """The address to open a socket to: an IPv4-mapped address becomes plain IPv4."""
    if isinstance(address, IPv6Address) and address in _IPV6_MAPPED:
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    return address


class AddressRules:
    """Decides whether a connection to an address is allowed.

    ``AddressRules()`` allows public addresses only. Administrators may refuse more with
    ``deny`` (their own public ranges, say); nothing here loosens the default except
    :meth:`unsafe_allowing`, whose name is the warning.
    """

    __slots__ = ("_allowed", "_denied")

    def __init__(self, *, deny: Iterable[IPNetwork] = ()) -> None:
        self._denied: tuple[IPNetwork, ...] = tuple(deny)
        self._allowed: tuple[IPNetwork, ...] = ()

    @classmethod
    def unsafe_allowing(cls, *networks: IPNetwork, deny: Iterable[IPNetwork] = ()) -> AddressRules:
        """Rules that also allow the given non-public networks.

        For tests that talk to loopback servers, and for nothing a model or a setting can
        reach. Networks must be ``ipaddress`` network objects, never strings, and may not be
        the whole address space.
        """
        if not networks:
            raise ValueError("unsafe_allowing() needs at least one network to allow")
        for network in networks:
            if not isinstance(network, IPv4Network | IPv6Network):
                raise TypeError(
                    f"unsafe_allowing() takes ipaddress networks, not {type(network).__name__}"
                )
            if network.prefixlen == 0:
                raise ValueError(f"refusing to allow the whole address space {network}")
        rules = cls(deny=deny)
        rules._allowed = tuple(networks)
        return rules

    @property
    def allowances(self) -> tuple[IPNetwork, ...]:
        """The non-public networks these rules exempt (empty for the default)."""
        return self._allowed

    def refusal(self, address: IPAddress) -> str | None:
        """Why a connection to ``address`` is refused, or ``None`` when it is allowed."""
        for network in self._denied:
            if address.version == network.version and address in network:
                return f"in the administrator's denied network {network}"
        for network in self._allowed:
            if address.version == network.version and address in network:
                return None
        return non_public_reason(address)

    def __repr__(self) -> str:
        allowed = ", ".join(str(n) for n in self._allowed)
        return f"AddressRules(unsafe_allowing=[{allowed}])" if allowed else "AddressRules()"


def parse_networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """Parse CIDR strings from settings (``strict=False``: host bits are ignored)."""
    return tuple(ip_network(value.strip(), strict=False) for value in values)
