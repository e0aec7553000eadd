"""`corral serve`'s listening socket: the connections it accepts send without Nagle's delay."""

from __future__ import annotations

import asyncio
import socket

from corral.cli.serve import bind_listener


async def test_connections_accepted_by_the_serve_listener_have_tcp_nodelay() -> None:
    # uvicorn serves a given socket through loop.create_server(sock=...), as here. Without
    # TCP_NODELAY an answer written as head then body waits for the client's delayed ACK.
    listener = bind_listener("127.0.0.1", 0)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(handle, sock=listener)
    async with server:
        reader, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        assert await asyncio.wait_for(accepted, 10) != 0
        assert await reader.read() == b""  # the server side closed
        writer.close()
        await writer.wait_closed()
