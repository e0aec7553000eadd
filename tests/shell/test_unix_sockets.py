"""Host UNIX sockets stay out of reach of sandboxed commands (issue 28, finding 7).

A host daemon (here, the test itself, outside the sandbox and as root) listens on a
world-writable socket inside a source the command may write: the uid switch does not stop
that, only the seccomp filter's refusal to create a UNIX socket that can address a path.
Each evasion a command would try next is tried by a real process, under every kernel tier
this machine has, with the network off and on (bubblewrap then shares the host's network
namespace and its abstract sockets), and each refusal has a control that must still work
(connected socket pairs, the sandbox's own loopback).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from corral.platform import Platform
from tests.shell.conftest import shells
from tests.shell.test_confinement import probe, tier, world

__all__ = ["tier", "world"]  # fixtures shared with test_confinement

_EVASIONS = """\
HOST, DATAGRAM, ABSTRACT = {host!r}, {datagram!r}, {abstract!r}
SOCKET = {{'x86_64': 41, 'aarch64': 198}}[os.uname().machine]
SOCKETPAIR = {{'x86_64': 53, 'aarch64': 199}}[os.uname().machine]
def connect(kind, address):
    def go():
        s = socket.socket(socket.AF_UNIX, kind)
        s.settimeout(5)
        s.connect(address)
        s.close()
    return go
def pair_sendto(kind):
    def go():
        a, b = socket.socketpair(socket.AF_UNIX, kind)
        return a.sendto(b'from a pair', DATAGRAM)
    return go
def pair_connect():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.connect(DATAGRAM)
    return a.send(b'from a reconnected pair')
def pair_redirect(kind, address):
    def go():
        a, b = socket.socketpair(socket.AF_UNIX, kind)
        a.connect(address)
    return go
def pair_sendto_connected(kind):
    def go():
        a, b = socket.socketpair(socket.AF_UNIX, kind)
        return a.sendto(b'from a connected pair', DATAGRAM)
    return go
def datagram():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    return s.sendto(b'from a datagram socket', DATAGRAM)
def pair_echo(kind):
    def go():
        a, b = socket.socketpair(socket.AF_UNIX, kind)
        a.sendall(b'twin')
        return b.recv(4)
    return go
def own_loopback():
    server = socket.create_server(('127.0.0.1', 0))
    client = socket.create_connection(server.getsockname(), timeout=5)
    peer, _ = server.accept()
    client.sendall(b'loop')
    return peer.recv(4)
print('stream', outcome(connect(socket.SOCK_STREAM, HOST)))
print('seqpacket', outcome(connect(socket.SOCK_SEQPACKET, HOST)))
print('abstract', outcome(connect(socket.SOCK_STREAM, ABSTRACT)))
print('procroot', outcome(connect(socket.SOCK_STREAM, '/proc/self/root' + HOST)))
print('datagram', outcome(datagram))
print('pair-dgram', outcome(pair_sendto(socket.SOCK_DGRAM)))
print('pair-dgram-cloexec', outcome(pair_sendto(socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)))
print('pair-raw', outcome(pair_sendto(socket.SOCK_RAW)))
print('pair-connect', outcome(pair_connect))
print('pair-stream-connect', outcome(pair_redirect(socket.SOCK_STREAM, HOST)))
print('pair-seqpacket-connect', outcome(pair_redirect(socket.SOCK_SEQPACKET, HOST)))
# The address is refused (EISCONN) or ignored (seqpacket: the twin gets it); never the host.
print('pair-stream-sendto', outcome(pair_sendto_connected(socket.SOCK_STREAM)))
print('pair-seqpacket-sendto', outcome(pair_sendto_connected(socket.SOCK_SEQPACKET)))
# Not connected anywhere: creating it is what the filter must refuse.
print('vsock', outcome(lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close()))
print('raw-socket-high-bits', raw(SOCKET, 1 | 1 << 32, 1, 0))
print('pair-stream', outcome(pair_echo(socket.SOCK_STREAM)))
print('pair-seqpacket', outcome(pair_echo(socket.SOCK_SEQPACKET)))
print('loopback', outcome(own_loopback))
"""
_REFUSED = (
    "stream",
    "seqpacket",
    "abstract",
    "procroot",
    "datagram",
    "pair-dgram",
    "pair-dgram-cloexec",
    "pair-raw",
    "pair-connect",
    "pair-stream-connect",
    "pair-seqpacket-connect",
    "raw-socket-high-bits",
    "vsock",  # the hypervisor's host, past any network namespace
)


class HostDaemon:
    """What a host service exposes: a stream listener, a datagram socket, an abstract name."""

    def __init__(self, folder: Path) -> None:
        self.stream_path = folder / "daemon.sock"
        self.datagram_path = folder / "daemon.dgram"
        self.abstract = f"\0corral-test-{id(self):x}"
        self.connections: list[str] = []
        self.datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.datagram.bind(str(self.datagram_path))
        self.datagram.setblocking(False)
        self.datagram_path.chmod(0o777)

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.append("accepted")
        writer.close()

    def received(self) -> list[bytes]:
        """Every datagram that reached the daemon (none waits: the probe has exited)."""
        got: list[bytes] = []
        while True:
            try:
                got.append(self.datagram.recv(1024))
            except BlockingIOError:
                return got

    def evasions(self) -> str:
        return _EVASIONS.format(
            host=str(self.stream_path), datagram=str(self.datagram_path), abstract=self.abstract
        )

    def close(self) -> None:
        self.datagram.close()


@pytest.fixture
async def daemon(tier: tuple[Platform, Path]) -> AsyncIterator[HostDaemon]:
    """A host daemon listening, world-writable, inside the command's own source."""
    _, work = tier
    host = HostDaemon(work)
    path_server = await asyncio.start_unix_server(host.accept, str(host.stream_path))
    host.stream_path.chmod(0o777)
    abstract_server = await asyncio.start_unix_server(host.accept, host.abstract)
    try:
        async with path_server, abstract_server:
            yield host
    finally:
        host.close()


def _rows(text: str) -> Iterator[tuple[str, str]]:
    for row in text.splitlines():
        name, _, result = row.partition(" ")
        yield name, result


async def _assert_unreachable(platform: Platform, work: Path, host: HostDaemon) -> None:
    text = await probe(platform, work, host.evasions())
    rows = dict(_rows(text))
    for name in _REFUSED:
        assert not rows[name].startswith("ok"), (name, text)
    assert host.connections == [], text
    assert host.received() == [], text
    assert rows["pair-stream"] == "ok:b'twin'", text
    assert rows["pair-seqpacket"] == "ok:b'twin'", text


async def test_a_host_socket_in_a_source_is_unreachable_with_the_network_off(
    tier: tuple[Platform, Path], daemon: HostDaemon
) -> None:
    platform, work = tier
    await _assert_unreachable(platform, work, daemon)
    if shells(platform).status.tier == "bubblewrap":
        # Only UNIX sockets are refused: the sandbox's own loopback still serves its tools.
        text = await probe(platform, work, daemon.evasions())
        assert "loopback ok:b'loop'" in text


async def test_a_host_socket_is_unreachable_with_the_network_on(
    tier: tuple[Platform, Path], daemon: HostDaemon
) -> None:
    """With the network on, bubblewrap shares the host's network namespace: its abstract
    sockets (an X server's, a container runtime's...) would be one connect away."""
    platform, work = tier
    await platform.admin.set_live("shell_network", True)
    await _assert_unreachable(platform, work, daemon)
