"""`corral serve`: the HTTP server on the embedded default or a configured database."""

from __future__ import annotations

import socket
from typing import Annotated

import typer

from corral.cli._global_options import cli_state
from corral.cli._run import console, fail, settle_heap

__all__ = ["bind_listener", "serve"]


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: any free port); OSError when taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    made = socket.create_server((host, port), family=family, backlog=2048)
    # create_server leaves the protocol 0, and the connections it accepts inherit it; asyncio
    # sets TCP_NODELAY only on sockets whose protocol says TCP, so each answer (head and body
    # sent apart) waited ~40 ms for the client's delayed ACK. Said explicitly, it is set.
    return socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, fileno=made.detach())


def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option(help="Address to bind (default from settings).")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (default from settings).")] = None,
) -> None:
    """Start the server. API calls need a token: `corral tokens create owner`."""
    import asyncio

    import uvicorn

    from corral.cli._open import open_waiting_for_a_slot
    from corral.server import create_app
    from corral.server.ui import sign_in_link
    from corral.settings import load_settings

    data_dir = cli_state(ctx).data_dir

    configured = load_settings(data_dir)
    bind_host = host or configured.host
    wanted = port if port is not None else configured.port
    try:
        # Bound before anything is printed: a taken port must not print a dead link.
        listener = bind_listener(bind_host, wanted)
    except OSError as exc:
        fail(
            f"cannot listen on {bind_host}:{wanted} ({exc.strerror or exc}); stop what uses "
            "it, or pick another port with --port"
        )
    bind_port = int(listener.getsockname()[1])

    async def main() -> None:
        # On PostgreSQL the server enqueues runs for `corral worker` processes.
        platform = await open_waiting_for_a_slot(data_dir, run_jobs=configured.hosted_run_jobs)
        settings = platform.settings
        base = f"http://{bind_host}:{bind_port}"
        console.print(
            f"corral serving {len(platform.registry.tools)} tools from "
            f"{settings.data_dir} on {base} (docs at /docs)"
        )
        for error in platform.registry.errors:
            console.print(f"[red]load error[/] {error}", highlight=False)
        from corral.runtime.skills import Skills

        skills = platform.services.get(Skills)
        if skills is not None:  # ${CORRAL_API} for skill scripts: where this server listens
            skills.serving_at(bind_host, bind_port)
        app = create_app(platform, close_platform=True)
        owner = await platform.caller()
        link = sign_in_link(app, owner.user_id, base)
        console.print(
            f"web UI: {link} (one-time sign-in link for {owner.name!r})",
            highlight=False,
            soft_wrap=True,
        )
        settle_heap()
        config = uvicorn.Config(app, log_level="info")
        await uvicorn.Server(config).serve(sockets=[listener])

    from corral.errors import CorralError

    try:
        asyncio.run(main())
    except CorralError as exc:  # a bad setting, an unreachable database: no traceback
        fail(str(exc))
