"""Bridging the egress proxy into a sandbox that has no network of its own.

The sandbox's seccomp filter refuses every UNIX socket that could address a path, so a
socket bound into the sandbox would be unreachable (and a hole if it were not). Instead
the command starts under a tiny bridge (:data:`BRIDGE`, run by the system ``python3``
inside the sandbox): it opens a TCP listening socket on ``127.0.0.1:3128`` in the
sandbox's own network namespace, hands that socket to the platform over one end of a
socket pair inherited from the spawner (``SCM_RIGHTS``), closes both, and execs the
command. The platform accepts the sandbox's connections on that socket directly; no
process of the bridge stays behind, and the command holds no descriptor leading out.

A helper spawned by a library that passes no descriptors (the MCP SDK's ``stdio_client``)
gets the ``path`` handoff instead: the bridge, which runs before the helper drops its uid,
connects to a UNIX socket in a private folder of the platform's (:data:`BRIDGE_BY_PATH`)
and hands the listener over there; the platform stops listening after that one handoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Sequence
from typing import Literal

from corral.shell.egress.proxy import EgressProxy

__all__ = [
    "BRIDGE",
    "BRIDGE_BY_PATH",
    "PROXY_PORT",
    "EgressBridge",
    "bridge_python",
    "proxy_environment",
]

PROXY_PORT = 3128
LISTENER_SECONDS = 30.0
# The C modules only (``_socket``, ``posix``): the pure-Python ``socket`` and ``os`` imports
# would add to every proxied call's start-up.
_SEND = (
    "s=_socket.socket(_socket.AF_INET,_socket.SOCK_STREAM)\n"
    "s.bind(('127.0.0.1',int(sys.argv[2])));s.listen(256)\n"
    "c.sendmsg([b'L'],[(_socket.SOL_SOCKET,_socket.SCM_RIGHTS,"
    "s.fileno().to_bytes(4,sys.byteorder))]);s.close();c.close()\n"
    "posix.execv(sys.argv[3],sys.argv[3:])\n"
)
BRIDGE = "import _socket,posix,sys\nc=_socket.socket(fileno=int(sys.argv[1]))\n" + _SEND
BRIDGE_BY_PATH = (
    "import _socket,posix,sys\n"
    "c=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM);c.connect(sys.argv[1])\n" + _SEND
)
_PYTHONS = ("/usr/bin/python3", "/bin/python3")


def bridge_python() -> str | None:
    """The system python the bridge runs with inside the sandbox (it sees ``/usr``)."""
    return next((p for p in _PYTHONS if os.access(p, os.X_OK)), None)


def proxy_environment(port: int = PROXY_PORT) -> dict[str, str]:
    """What the child gets so HTTP clients, Node and git go through the proxy."""
    http = f"http://127.0.0.1:{port}"
    socks = f"socks5h://127.0.0.1:{port}"
    env = {
        "HTTP_PROXY": http,
        "HTTPS_PROXY": http,
        "ALL_PROXY": socks,
        "NO_PROXY": "",
        "NODE_USE_ENV_PROXY": "1",
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "http.proxy",
        "GIT_CONFIG_VALUE_0": http,
        "GIT_CONFIG_KEY_1": "https.proxy",
        "GIT_CONFIG_VALUE_1": http,
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        env[name.lower()] = env[name]
    return env


class EgressBridge:
    """One call's bridge: the socket pair, the wrapped argv, then the proxy serving."""

    def __init__(
        self,
        proxy: EgressProxy,
        python: str,
        *,
        port: int = PROXY_PORT,
        handoff: Literal["fd", "path"] = "fd",
    ) -> None:
        self.proxy = proxy
        self.port = port
        self._python = python
        self._parent, self._child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._parent.setblocking(False)
        self._folder: str | None = None
        if handoff == "path":
            self._child.close()
            self._parent.close()
            self._folder = tempfile.mkdtemp(prefix="corral-egress-")  # 0700, the platform's
            self._parent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._parent.bind(os.path.join(self._folder, "bridge"))
            self._parent.listen(1)
            self._parent.setblocking(False)
        self._task: asyncio.Task[None] | None = None
        self.serving = asyncio.Event()

    @property
    def child_fd(self) -> int:
        """The descriptor the spawner passes to the sandbox (inheritable there)."""
        return self._child.fileno()

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """What the spawner passes (nothing with the path handoff)."""
        return () if self._folder is not None else (self.child_fd,)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run by the bridge once the listener is handed over."""
        if self._folder is not None:
            path = os.path.join(self._folder, "bridge")
            return [self._python, "-I", "-S", "-c", BRIDGE_BY_PATH, path, str(self.port), *argv]
        return [self._python, "-I", "-S", "-c", BRIDGE, str(self.child_fd), str(self.port), *argv]

    def spawned(self) -> None:
        """After the spawn: drop our copy of the child's end, start waiting for the socket."""
        with contextlib.suppress(OSError):
            self._child.close()
        self._task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self) -> None:
        if self._folder is not None:
            listener = await self._receive_by_path()
        else:
            listener = await _receive_listener(self._parent)
        if listener is not None:
            await self.proxy.serve(listener)
            self.serving.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        with contextlib.suppress(OSError):
            self._child.close()
        self._parent.close()
        self._remove_folder()
        await self.proxy.close()

    async def _receive_by_path(self) -> socket.socket | None:
        loop = asyncio.get_running_loop()
        try:
            channel, _ = await asyncio.wait_for(loop.sock_accept(self._parent), LISTENER_SECONDS)
        except TimeoutError:
            return None
        finally:
            self._parent.close()  # one handoff only
            self._remove_folder()
        with channel:
            channel.setblocking(False)
            return await _receive_listener(channel)

    def _remove_folder(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


async def _receive_listener(channel: socket.socket) -> socket.socket | None:
    loop = asyncio.get_running_loop()
    received: asyncio.Future[socket.socket | None] = loop.create_future()

    def readable() -> None:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 1)
        except BlockingIOError:
            return
        except OSError:
            fds = []
        if not received.done():
            received.set_result(socket.socket(fileno=fds[0]) if fds else None)

    loop.add_reader(channel.fileno(), readable)
    try:
        return await asyncio.wait_for(received, LISTENER_SECONDS)
    except TimeoutError:
        return None
    finally:
        loop.remove_reader(channel.fileno())
