"""`corral credentials`: provider keys stored encrypted, per user or for the whole project.

Values are read from a hidden prompt or from standard input, never from the command line,
where they would be kept in shell history and shown to every process listing.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, fail, print_json, run_with_platform
from corral.errors import UsageError

if TYPE_CHECKING:
    from corral.connect import CredentialEntry
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(
    help="Provider credentials (API keys, instance URLs), encrypted at rest.",
    no_args_is_help=True,
)

_Name = Annotated[str, typer.Argument(help="Credential name, e.g. 'tavily' or 'brave'.")]
_Project = Annotated[
    bool, typer.Option("--project", help="The project-wide credential (admins), not your own.")
]


def _read_value() -> str:
    if sys.stdin.isatty():
        value: str = typer.prompt("value (hidden)", hide_input=True)
        return value
    return sys.stdin.read()


@app.command("set")
def set_credential(
    ctx: typer.Context,
    name: _Name,
    project: _Project = False,
    provider: Annotated[str, typer.Option(help="The provider it belongs to.")] = "",
    inject_host: Annotated[
        list[str] | None,
        typer.Option(
            "--inject-host",
            help="A host the egress proxy may send it to (repeat; '*.example.com' for "
            "names below): commands then see only a placeholder.",
        ),
    ] = None,
    inject_as: Annotated[
        str,
        typer.Option(
            "--inject-as", help="How it is sent there: header, query or basic (git's way)."
        ),
    ] = "header",
    inject_field: Annotated[
        str,
        typer.Option(
            "--inject-field",
            help="The header (default Authorization) or the query parameter it travels in.",
        ),
    ] = "",
) -> None:
    """Store a value read from a hidden prompt or standard input (never from arguments)."""
    from corral.connect.credential_injection import injection

    try:
        sending = injection(inject_host or [], inject_as, inject_field)
    except UsageError as error:
        fail(str(error))
    value = _read_value()
    if not value.strip():
        fail("no value was given on standard input or at the prompt; nothing was stored")

    async def work(platform: Platform) -> CredentialEntry:
        caller = await platform.caller()
        return await platform.credentials.set(
            name,
            value,
            user_id=caller.user_id,
            scope="project" if project else "user",
            provider=provider,
            injection=sending,
        )

    entry = run_with_platform(ctx, work)
    console.print(f"stored {entry.scope} credential {entry.name!r} (encrypted)", highlight=False)
    if entry.injection is not None:
        console.print(
            f"injected by the egress proxy as {entry.injection.inject_as} for "
            f"{', '.join(entry.injection.hosts)}",
            highlight=False,
        )


@app.command("list")
def list_credentials(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """Your credentials and the project's: names and whether a value is stored, no values."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        caller = await platform.caller()
        return [
            {
                "name": e.name,
                "scope": e.scope,
                "provider": e.provider,
                "hasValue": e.has_value,
                "updatedAt": e.updated_at.isoformat(),
                "injectHosts": list(e.injection.hosts) if e.injection else [],
                "injectAs": e.injection.inject_as if e.injection else "",
            }
            for e in await platform.credentials.entries(user_id=caller.user_id)
        ]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    table = Table("name", "scope", "provider", "has value", "updated")
    for row in rows:
        table.add_row(
            row["name"], row["scope"], row["provider"], str(row["hasValue"]), row["updatedAt"]
        )
    console.print(table)


@app.command("remove")
def remove_credential(ctx: typer.Context, name: _Name, project: _Project = False) -> None:
    """Delete a stored credential."""

    async def work(platform: Platform) -> None:
        caller = await platform.caller()
        await platform.credentials.remove(
            name, user_id=caller.user_id, scope="project" if project else "user"
        )

    run_with_platform(ctx, work)
    console.print(f"removed {'project' if project else 'user'} credential {name!r}")


@app.command("rotate-key")
def rotate_key(ctx: typer.Context) -> None:
    """Encrypt every stored credential with a fresh key and retire the old key."""

    async def work(platform: Platform) -> int:
        return await platform.credentials.rotate()

    count = run_with_platform(ctx, work)
    console.print(f"rotated the credential key; {count} value(s) re-encrypted")
