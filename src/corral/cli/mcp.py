"""`corral mcp serve`: Corral's tools over MCP on stdin/stdout, for an MCP client to start.

Nothing but the protocol is written to stdout; errors go to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._run import run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Corral as an MCP server.", no_args_is_help=True)


@app.command("serve")
def serve(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option(help="Act as this user (name or id); default the local owner.")
    ] = None,
    profile: Annotated[
        str, typer.Option(help="Permission profile of every call: safe, balanced or auto.")
    ] = "balanced",
) -> None:
    """Serve the user's visible tools over stdio; every call takes the dispatch pipeline."""

    async def work(platform: Platform) -> None:
        from corral.policy.profiles import parse_profile
        from corral.server.mcp_bridge import serve_stdio

        chosen = parse_profile(profile)
        caller = await platform.caller(user)
        await serve_stdio(platform, user=caller.user_id, profile=chosen)

    run_with_platform(ctx, work)
