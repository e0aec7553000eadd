"""`corral serve`: the HTTP server on the embedded default or a configured database."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
import uvicorn

from corral.cli._run import console, state
from corral.platform import open_platform
from corral.server import create_app


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to bind (default from settings).")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (default from settings).")] = None,
) -> None:
    """Start the server. API calls need a token: `corral tokens create owner`."""

    async def main() -> None:
        platform = await open_platform(state.data_dir)
        settings = platform.settings
        bind_host = host or settings.host
        bind_port = port if port is not None else settings.port
        console.print(
            f"corral serving {len(platform.registry.tools)} tools from "
            f"{settings.data_dir} on http://{bind_host}:{bind_port} (docs at /docs)"
        )
        for error in platform.registry.errors:
            console.print(f"[red]load error[/] {error}", highlight=False)
        app = create_app(platform, close_platform=True)
        config = uvicorn.Config(app, host=bind_host, port=bind_port, log_level="info")
        await uvicorn.Server(config).serve()

    asyncio.run(main())
