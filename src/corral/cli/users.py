"""`corral users`, `corral roles`, `corral tokens`."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from sqlalchemy import select

from corral.cli._run import console, print_json, run_with_platform
from corral.platform import Platform
from corral.platform.identity import NewToken
from corral.store import tables as t

users = typer.Typer(help="Users and their roles.", no_args_is_help=True)
roles = typer.Typer(help="Roles and the features they grant.", no_args_is_help=True)
tokens = typer.Typer(help="API tokens for the server.", no_args_is_help=True)


@users.command("list")
def list_users(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        async with platform.sessions() as session:
            rows = await session.scalars(select(t.User).order_by(t.User.created_at))
            return [{"id": u.id, "name": u.name, "role": u.role} for u in rows]

    rows = run_with_platform(work)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "name", "role")
    for row in rows:
        table.add_row(row["id"], row["name"], row["role"])
    console.print(table)


@users.command("add")
def add_user(
    name: Annotated[str, typer.Argument(help="User name.")],
    role: Annotated[str, typer.Option(help="Role name.")] = "member",
) -> None:
    async def work(platform: Platform) -> str:
        return await platform.identity.create_user(name, role)

    console.print(f"created user {name!r} ({run_with_platform(work)}) with role {role!r}")


@users.command("role")
def set_role(
    user: Annotated[str, typer.Argument(help="User name or id.")],
    role: Annotated[str, typer.Argument(help="New role.")],
) -> None:
    async def work(platform: Platform) -> None:
        await platform.identity.set_role(user, role)

    run_with_platform(work)
    console.print(f"{user!r} now has role {role!r}")


@roles.command("list")
def list_roles(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    async def work(platform: Platform) -> list[dict[str, Any]]:
        async with platform.sessions() as session:
            rows = await session.scalars(select(t.Role).order_by(t.Role.name))
            return [{"name": r.name, "features": r.features, "builtin": r.builtin} for r in rows]

    rows = run_with_platform(work)
    if as_json:
        print_json(rows)
        return
    table = Table("role", "built-in", "features")
    for row in rows:
        table.add_row(row["name"], "yes" if row["builtin"] else "no", ", ".join(row["features"]))
    console.print(table)


@roles.command("set")
def set_role_features(
    name: Annotated[str, typer.Argument(help="Custom role name.")],
    features: Annotated[list[str], typer.Argument(help="Feature ids or prefix.* patterns.")],
) -> None:
    """Create or replace a custom role."""

    async def work(platform: Platform) -> None:
        await platform.identity.create_role(name, features)

    run_with_platform(work)
    console.print(f"role {name!r} grants {', '.join(features)}")


@tokens.command("create")
def create_token(
    user: Annotated[str, typer.Argument(help="User name or id.")],
    name: Annotated[str, typer.Option(help="A label for the token.")] = "api",
) -> None:
    """Create an API token; it is shown once and stored only as a hash."""

    async def work(platform: Platform) -> NewToken:
        return await platform.identity.create_token(user, name)

    created = run_with_platform(work)
    console.print(f"token {created.id} for {user!r} (shown once):")
    typer.echo(created.token)


@tokens.command("revoke")
def revoke_token(token_id: Annotated[str, typer.Argument(help="Token id (tok_…).")]) -> None:
    async def work(platform: Platform) -> None:
        await platform.identity.revoke_token(token_id)

    run_with_platform(work)
    console.print(f"revoked {token_id}")
