"""An ASGI app served by uvicorn on a free loopback port, inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.ready.set()


def bind_loopback() -> tuple[socket.socket, str]:
    """A listening socket on a free loopback port and its base URL, for an app that must
    know its own address before it is served."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextlib.asynccontextmanager
async def serving(app: Any, sock: socket.socket | None = None) -> AsyncIterator[str]:
    """Serve ``app`` (lifespan included) and yield its base URL; stop it on exit."""
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock] if sock is not None else None))
    ready = asyncio.create_task(server.ready.wait())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    if not server.ready.is_set():
        ready.cancel()
        await task  # raises what stopped the start
        raise RuntimeError("uvicorn ended before it started serving")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
