"""Name resolution, behind a protocol so tests can fake it.

The fetcher calls :meth:`Resolver.resolve` once per hop and checks every address it
returns; it never gives the resolver a numeric host (those are parsed by
:mod:`~corral.web.fetch.hosts`). A resolver raises :class:`~corral.web.fetch.FetchError`
with code ``dns_failure`` when a name does not resolve; any other ``OSError`` is reported
the same way by the fetcher.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from ipaddress import ip_address
from typing import Protocol, runtime_checkable

from .addresses import IPAddress
from .errors import FetchError

__all__ = ["Resolver", "StaticResolver", "SystemResolver"]


@runtime_checkable
class Resolver(Protocol):
    """Turns a host name into the addresses to connect to."""

    async def resolve(self, host: str, port: int) -> Sequence[IPAddress]:
        """Every address ``host`` resolves to, in the order to try them."""
        ...


def _dns_failure(host: str, detail: str) -> FetchError:
    return FetchError(
        f"the host {host!r} could not be resolved ({detail}); check the spelling or try the "
        "site's main domain",
        code="dns_failure",
        data={"host": host},
    )


class SystemResolver:
    """``getaddrinfo`` in a worker thread (abandoned, not awaited, when the deadline hits)."""

    async def resolve(self, host: str, port: int) -> Sequence[IPAddress]:
        """Resolve through the operating system's resolver."""
        import anyio.to_thread  # with the first lookup, not every open that builds a resolver

        try:
            infos = await anyio.to_thread.run_sync(
                lambda: socket.getaddrinfo(
                    host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
                ),
                abandon_on_cancel=True,
            )
        except socket.gaierror as exc:
            raise _dns_failure(host, exc.strerror or str(exc)) from None
        except UnicodeError:
            raise _dns_failure(host, "not a valid DNS name") from None
        addresses: list[IPAddress] = []
        for family, _type, _proto, _name, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            text = str(sockaddr[0])
            if family == socket.AF_INET6 and len(sockaddr) >= 4 and sockaddr[3]:
                text = f"{text.split('%', 1)[0]}%{sockaddr[3]}"
            address = ip_address(text)
            if address not in addresses:
                addresses.append(address)
        return addresses


class StaticResolver:
    """A resolver answering from a fixed table; for tests and for pinning known hosts.

    ``answers`` maps a lowercase host name to its addresses. Names not in the table fail
    with ``dns_failure``. Every lookup is recorded in :attr:`calls`.
    """

    def __init__(self, answers: Mapping[str, Sequence[str | IPAddress]]) -> None:
        self._answers = {
            name.lower(): [ip_address(str(a)) for a in addresses]
            for name, addresses in answers.items()
        }
        self.calls: list[tuple[str, int]] = []

    async def resolve(self, host: str, port: int) -> Sequence[IPAddress]:
        """Answer from the table."""
        self.calls.append((host, port))
        try:
            return list(self._answers[host.lower()])
        except KeyError:
            raise _dns_failure(host, "no such name") from None
