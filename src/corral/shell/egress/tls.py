"""The proxy's interception hook, filled by the TLS side.

:class:`EgressProxy` hands a tunnel to a domain with method/path rules or a bound credential
to its ``interceptor`` with its own policy, connector and connection record;
:class:`TlsInterceptor` adapts those to what :func:`~corral.shell.egress.intercept.intercept`
takes (the connector bound to the call's policy for the address rules; each request's
decision noted on the connection's record, so the log and the tool result name a refused
request's rule and reason) and gives it the installation CA.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corral.shell.egress.ca import CertificateAuthority
from corral.shell.egress.credentials import CredentialBinding
from corral.shell.egress.intercept import intercept
from corral.shell.egress.log import ConnectionLog
from corral.shell.egress.policy import EgressPolicy, HostDecision
from corral.shell.egress.upstream import UpstreamConnector, UpstreamRefused

__all__ = ["TlsInterceptor"]


@dataclass(frozen=True, slots=True)
class TlsInterceptor:
    """The proxy's ``interceptor``: terminates TLS with ``ca`` and judges each request.

    ``upstream_tls`` verifies the real servers (the system trust store when None); tests with
    loopback stand-ins give a context trusting their own CA.
    """

    ca: CertificateAuthority
    upstream_tls: ssl.SSLContext | None = None

    async def __call__(
        self,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        host: str,
        port: int,
        policy: EgressPolicy,
        credentials: Sequence[Any],
        upstream: UpstreamConnector,
        record: ConnectionLog,
    ) -> None:
        judged = _Judged(policy, port, record)
        await intercept(
            client_reader,
            client_writer,
            host,
            port,
            judged,
            [c for c in credentials if isinstance(c, CredentialBinding)],
            _Bound(upstream, policy),
            judged,
            ca=self.ca,
            upstream_tls=self.upstream_tls,
        )


@dataclass(slots=True)
class _Judged:
    """The call's policy for each request, and the record that notes what it decided."""

    policy: EgressPolicy
    port: int
    record: ConnectionLog
    last: HostDecision | None = field(default=None)

    def decide_request(self, host: str, method: str, path: str) -> HostDecision:
        self.last = self.policy.decide_request(host, method, path, port=self.port)
        return self.last

    def request(self, method: str, path: str, decision: str, rule: str) -> None:
        seen = self.last or HostDecision(
            allowed=decision == "allowed", rule=rule, reason=f"{method} {path}: {decision}"
        )
        self.record.note_request(method, path, seen)

    def bytes(self, up: int, down: int) -> None:
        self.record.bytes_up += up
        self.record.bytes_down += down


@dataclass(frozen=True, slots=True)
class _Bound:
    """The proxy's connector with the call's policy (for its address rules)."""

    upstream: UpstreamConnector
    policy: EgressPolicy

    async def open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await self.upstream.open(host, port, self.policy)
        except UpstreamRefused as refused:
            raise OSError(refused.reason) from None
