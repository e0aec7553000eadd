"""`corral packages`: switch tool packages on and off."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._run import console, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Enable or disable tool packages.", no_args_is_help=True)


@app.command("enable")
def enable(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Package name.")]) -> None:
    async def work(platform: Platform) -> None:
        await platform.admin.set_package_enabled(name, True)

    run_with_platform(ctx, work)
    console.print(f"package {name!r} enabled")


@app.command("disable")
def disable(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Package name.")]) -> None:
    async def work(platform: Platform) -> None:
        await platform.admin.set_package_enabled(name, False)

    run_with_platform(ctx, work)
    console.print(f"package {name!r} disabled")
