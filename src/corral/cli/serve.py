"""`corral serve`: the HTTP server on the embedded default or a configured database."""

from __future__ import annotations

from typing import Annotated

import typer

from corral.cli._global_options import cli_state
from corral.cli._run import console, fail, settle_heap

__all__ = ["serve"]


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

    from corral.platform import open_platform
    from corral.server import create_app
    from corral.server.ui import sign_in_link
    from corral.settings import load_settings

    data_dir = cli_state(ctx).data_dir

    async def main() -> None:
        # On PostgreSQL the server enqueues runs for `corral worker` processes.
        run_jobs = load_settings(data_dir).hosted_run_jobs
        platform = await open_platform(data_dir, run_jobs=run_jobs)
        settings = platform.settings
        bind_host = host or settings.host
        bind_port = port if port is not None else settings.port
        console.print(
            f"corral serving {len(platform.registry.tools)} tools from "
            f"{settings.data_dir} on http://{bind_host}:{bind_port} (docs at /docs)"
        )
        for error in platform.registry.errors:
            console.print(f"[red]load error[/] {error}", highlight=False)
        from corral.runtime.skills import Skills

        skills = platform.services.get(Skills)
        if skills is not None:  # ${CORRAL_API} for skill scripts: where this server listens
            skills.serving_at(bind_host, bind_port)
        app = create_app(platform, close_platform=True)
        owner = await platform.caller()
        # With port 0 the port is chosen at bind time: print the path for uvicorn's address.
        base = f"http://{bind_host}:{bind_port}" if bind_port else ""
        link = sign_in_link(app, owner.user_id, base)
        console.print(
            f"web UI: {link} (one-time sign-in link for {owner.name!r})",
            highlight=False,
            soft_wrap=True,
        )
        settle_heap()
        config = uvicorn.Config(app, host=bind_host, port=bind_port, log_level="info")
        await uvicorn.Server(config).serve()

    from corral.errors import CorralError

    try:
        asyncio.run(main())
    except CorralError as exc:  # a bad setting, an unreachable database: no traceback
        fail(str(exc))
