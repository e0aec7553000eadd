"""`corral tokens`: API tokens for the server, shown once and stored as hashes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from corral.cli._run import console, run_with_platform

if TYPE_CHECKING:
    from corral.kernel.accounts import NewToken
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="API tokens for the server.", no_args_is_help=True)


@app.command("create")
def create_token(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="User name or id.")],
    name: Annotated[str, typer.Option(help="A label for the token.")] = "api",
) -> None:
    """Create an API token; it is shown once and stored only as a hash."""

    async def work(platform: Platform) -> NewToken:
        return await platform.identity.create_token(user, name)

    created = run_with_platform(ctx, work)
    console.print(f"token {created.id} for {user!r} (shown once):")
    typer.echo(created.token)


@app.command("revoke")
def revoke_token(
    ctx: typer.Context, token_id: Annotated[str, typer.Argument(help="Token id (tok_…).")]
) -> None:
    async def work(platform: Platform) -> None:
        await platform.identity.revoke_token(token_id)

    run_with_platform(ctx, work)
    console.print(f"revoked {token_id}")
