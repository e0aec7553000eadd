"""`corral sessions`: the web UI's browser sessions, listed and ended by an administrator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.kernel.ui_sessions import UiSessionRecord
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(help="Web UI sessions: list the open ones, end one.", no_args_is_help=True)


@app.command("list")
def list_sessions(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option(help="Only this user's (name or id).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The open browser sessions of the web UI, oldest first."""

    async def work(platform: Platform) -> list[UiSessionRecord]:
        from corral.kernel.ui_sessions import UiSessions

        user_id = None if user is None else (await platform.caller(user)).user_id
        return await UiSessions(platform.kernel.sessions).list(user_id=user_id)

    records = run_with_platform(ctx, work)
    if as_json:
        print_json(
            [
                {
                    "id": r.id,
                    "user_id": r.user_id,
                    "token_id": r.token_id,
                    "created_at": r.created_at.isoformat(),
                    "expires_at": r.expires_at.isoformat(),
                }
                for r in records
            ]
        )
        return
    if not records:
        console.print("no open sessions")
        return
    table = Table("id", "user", "begun with", "since", "until")
    for r in records:
        begun = f"token {r.token_id}" if r.token_id else "sign-in link"
        table.add_row(
            r.id,
            r.user_id,
            begun,
            r.created_at.strftime("%Y-%m-%d %H:%M"),
            r.expires_at.strftime("%Y-%m-%d %H:%M"),
        )
    console.print(table)


@app.command("revoke")
def revoke_session(
    ctx: typer.Context,
    session_id: Annotated[
        str, typer.Argument(help="Session id (s_…), from `corral sessions list`.")
    ],
) -> None:
    """End a session at once: its browser is sent to the sign-in page on its next request."""

    async def work(platform: Platform) -> None:
        from corral.kernel.ui_sessions import UiSessions

        await UiSessions(platform.kernel.sessions).revoke(session_id)

    run_with_platform(ctx, work)
    console.print(f"revoked {session_id}")
