"""`corral connect`: the project's connections as the connect tool sees them, and the OAuth
authorization of an MCP server by a person at this terminal.

Every command calls the connect tool through the dispatch pipeline as the local owner, so it
answers exactly what the tool answers (the control plane's checks, grants and projections).
``authorize`` prints the authorization URL for a person to open, then serves the OAuth
callback itself on the address ``corral serve`` binds (which ``public_url`` must reach) until
the person's browser arrives or ``--timeout`` passes; a running server holding that address
is named, with what to do instead.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._run import console, print_json, run_with_platform
from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.connect.mcp_client import McpConnection
    from corral.platform import Platform

__all__ = [
    "KINDS",
    "app",
    "authorize_server",
    "bind_callback",
    "callback_address",
    "check_server",
    "list_connections",
]

KINDS = ("mcp", "credential", "source", "git", "channel")

app = typer.Typer(
    help="Connections (MCP servers, credentials, sources, git remotes, channels).",
    no_args_is_help=True,
)

_Name = Annotated[str, typer.Argument(help="The MCP server's name (`corral connect list`).")]


async def _connect(platform: Platform, args: dict[str, Any]) -> dict[str, Any]:
    result = await platform.call_tool("connect", args, profile="auto")
    if result.is_error or result.data is None:
        raise UsageError(result.text)
    return dict(result.data)


def _servers(platform: Platform) -> Any:
    from corral.packages.core.mcp_servers import McpServers

    servers = platform.services.get(McpServers)
    if servers is None:
        raise UsageError("no MCP service is installed (the core package is disabled)")
    return servers


def _known(platform: Platform, name: str) -> Any:
    view = _servers(platform).view(name)
    if view is None:
        raise UsageError(
            f"no MCP server named {name!r} is connected; `corral connect list` shows the "
            "connected ones"
        )
    return view


async def list_connections(platform: Platform, kinds: list[str]) -> list[dict[str, Any]]:
    """Each kind's rows (or why the caller may not list it), as the connect tool lists them."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise UsageError(f"unknown kind(s) {unknown}; use {', '.join(KINDS)}")
    return list((await _connect(platform, {"list": kinds or list(KINDS)}))["lists"])


async def check_server(platform: Platform, name: str) -> dict[str, Any]:
    """An MCP server's state, tools and problem, as connect's check answers."""
    _known(platform, name)
    [step] = (await _connect(platform, {"check": [{"kind": "mcp", "name": name}]}))["applied"]
    return dict(step)


def callback_address(platform: Platform) -> tuple[str, int]:
    """Where the OAuth callback must be served: where ``corral serve`` listens, which the
    redirect (``public_url``, else ``http://host:port``) must reach."""
    _servers(platform).check_callback()
    return platform.settings.host, platform.settings.port


def bind_callback(host: str, port: int) -> socket.socket:
    """A listening socket for the callback, or a clear error naming what holds it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(16)
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen for the OAuth callback on {host}:{port} ({exc.strerror}). If "
            "`corral serve` runs there, authorize through it (the connect tool's authorize in "
            "a chat, or the web UI), or stop it and run this again; otherwise set host and "
            "port (CORRAL_HOST, CORRAL_PORT) to an address public_url reaches"
        ) from None
    return sock


async def authorize_server(
    platform: Platform,
    name: str,
    *,
    wait_seconds: float,
    show_url: Callable[[str], None],
    sock: socket.socket | None = None,
) -> dict[str, Any]:
    """Hand a person the authorization URL of ``name`` and serve the callback until it
    arrives (or ``wait_seconds`` pass); returns the outcome and the server's state."""
    view = _known(platform, name)
    if view.transport != "http":
        raise UsageError(
            f"MCP server {name!r} is a local command (stdio) and needs no OAuth authorization; "
            f"`corral connect check {name}` shows its state"
        )
    address = callback_address(platform) if sock is None else None
    [step] = (await _connect(platform, {"authorize": [{"kind": "mcp", "name": name}]}))["applied"]
    connection: McpConnection | None = _servers(platform).connection(name)
    if step["handoff"] is None or connection is None:
        if sock is not None:
            sock.close()
        found = await check_server(platform, name)
        outcome = "already connected" if found["state"] == "connected" else "not waiting"
        return {"outcome": outcome, **found}
    if address is not None:
        sock = bind_callback(*address)
    assert sock is not None
    show_url(str(step["handoff"]["url"]))
    outcome = await _serve_callback(platform, connection, sock, wait_seconds)
    return {"outcome": outcome, **await check_server(platform, name)}


async def _serve_callback(
    platform: Platform, connection: McpConnection, sock: socket.socket, wait_seconds: float
) -> str:
    import asyncio

    import uvicorn
    from fastapi import FastAPI

    from corral.server.routes import connect_oauth

    callback = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    callback.state.platform = platform
    callback.include_router(connect_oauth.router)
    config = uvicorn.Config(callback, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(wait_seconds):
            await connection.wait_until(lambda: connection.state in ("connected", "down", "closed"))
    except TimeoutError:
        return "timed out"
    finally:
        server.should_exit = True  # uvicorn lets the callback's own answer finish first
        await task
        sock.close()
    return "connected" if connection.state == "connected" else "not connected"


# -- commands ---------------------------------------------------------------------------


def _print_rows(lists: list[dict[str, Any]]) -> None:
    for item in lists:
        if "refused" in item:
            console.print(f"{item['kind']}: refused ({item['refused']})", highlight=False)
            continue
        console.print(f"{item['kind']}: {len(item['rows'])}", highlight=False)
        for row in item["rows"]:
            rest = {k: v for k, v in row.items() if k != "name"}
            console.print(f"  {row.get('name', '?')}  {json.dumps(rest)}", highlight=False)


@app.command("list")
def list_command(
    ctx: typer.Context,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help=f"Only these kinds ({', '.join(KINDS)}).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every connection you may see, by kind: names, states and whether values are stored."""
    lists = run_with_platform(ctx, lambda platform: list_connections(platform, kind or []))
    if as_json:
        print_json(lists)
    else:
        _print_rows(lists)


@app.command("check")
def check_command(
    ctx: typer.Context, name: _Name, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """An MCP server's state, its tools and what is wrong with it, if anything."""
    found = run_with_platform(ctx, lambda platform: check_server(platform, name))
    if as_json:
        print_json(found)
        return
    console.print(f"{name}: {found['state']} ({found.get('transport', '?')})", highlight=False)
    if found.get("tools"):
        console.print(f"tools: {', '.join(found['tools'])}", highlight=False)
    for left_out in found.get("leftOut", []):
        console.print(f"left out: {left_out}", highlight=False)
    for warning in found.get("warnings", []):
        console.print(f"warning: {warning}", highlight=False)
    if found.get("prompts"):
        console.print(f"prompts: {', '.join(found['prompts'])}", highlight=False)
    if found.get("problem"):
        console.print(f"problem: {found['problem']}", highlight=False)


@app.command("authorize")
def authorize_command(
    ctx: typer.Context,
    name: _Name,
    timeout: Annotated[
        float, typer.Option(min=1, help="Seconds to wait for the person's browser.")
    ] = 300,
) -> None:
    """Print the OAuth authorization link of an MCP server and wait until a person opened it."""

    def show(url: str) -> None:
        console.print(f"Open this link in a browser to authorize {name!r}:", highlight=False)
        typer.echo(url)  # plain, unwrapped: the whole link must stay copyable
        console.print(f"waiting up to {timeout:g} s for the browser to come back…")

    found = run_with_platform(
        ctx, lambda platform: authorize_server(platform, name, wait_seconds=timeout, show_url=show)
    )
    outcome = found["outcome"]
    console.print(f"{name}: {outcome} (state {found['state']})", highlight=False)
    if found.get("problem"):
        console.print(f"problem: {found['problem']}", highlight=False)
    if outcome not in ("connected", "already connected"):
        raise typer.Exit(1)
