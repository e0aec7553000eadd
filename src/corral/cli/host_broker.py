"""`corral host-broker`: the operator's broker for the host plane (runs until stopped)."""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import Annotated

import typer

from corral.cli._run import console, fail

__all__ = ["host_broker"]


def host_broker(
    socket: Annotated[Path, typer.Option(help="Unix socket to listen on (created mode 0600).")],
    allow: Annotated[
        list[str], typer.Option(help="A command the broker may run (repeat the option).")
    ],
    root: Annotated[
        list[str] | None, typer.Option(help="A folder commands may start in (repeatable).")
    ] = None,
    max_timeout: Annotated[int, typer.Option(help="Ceiling of any command, seconds.")] = 300,
    peer_uid: Annotated[
        int | None, typer.Option(help="Only this user id may connect (SO_PEERCRED).")
    ] = None,
    sandbox: Annotated[
        bool, typer.Option(help="Run commands under bubblewrap, seeing only the roots.")
    ] = False,
    network: Annotated[bool, typer.Option(help="With --sandbox: allow the network.")] = False,
) -> None:
    """Serve the host plane: run allowlisted commands in the roots for the platform."""
    import asyncio

    from corral.shell.host.broker import BrokerConfig, HostBroker

    roots = [str(Path(r).resolve()) for r in (root or [])]
    if not roots:
        fail("name at least one --root folder commands may start in")
    if not allow:
        fail("name at least one --allow command")
    config = BrokerConfig(
        socket=socket,
        allow=frozenset(allow),
        roots=tuple(roots),
        max_timeout=max_timeout,
        peer_uid=peer_uid,
        sandbox=sandbox,
        network=network,
    )

    async def main() -> None:
        broker = HostBroker(config)
        server = await broker.serve()
        console.print(
            f"host broker on {socket} ({config.confinement}); allow: {', '.join(sorted(allow))}; "
            f"roots: {', '.join(roots)}",
            highlight=False,
        )
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        async with server:
            await done.wait()
        await broker.close()
        with contextlib.suppress(FileNotFoundError):
            socket.unlink()

    asyncio.run(main())
