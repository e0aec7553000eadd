"""A real HTTP server on loopback serving a platform, in the test's own event loop.

The socket is bound and listening before uvicorn starts, so a client (a skill's ``curl``
in a sandboxed subprocess) may connect at once: the kernel queues the connection until the
server accepts it. No sleep, no polling for readiness.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn

from corral.platform import Platform
from corral.server import create_app

__all__ = ["bound_socket", "serving"]


def bound_socket() -> socket.socket:
    """A listening TCP socket on 127.0.0.1 with a free port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@contextlib.asynccontextmanager
async def serving(platform: Platform, sock: socket.socket) -> AsyncIterator[str]:
    """Serve ``platform`` on ``sock``; yields the base URL."""
    config = uvicorn.Config(create_app(platform), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
