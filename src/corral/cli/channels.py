"""`corral channels`: messaging channels and the pairing of their senders.

Channels are connected through the ``connect`` tool (kind ``channel``); here the owner of a
connection (or an administrator) sees its state and approves or rejects the pairing codes
unknown senders received. Approving maps the sender to a platform user — you, or with
``--user`` (administrators) someone else — whose rights their messages then run with.
``notify on|off`` chooses whether your new pending decisions reach your paired chats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, fail, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.channels import Channels
    from corral.platform import Platform

__all__ = ["app"]

app = typer.Typer(
    help="Messaging channels: state, sender pairing, notifications.", no_args_is_help=True
)
pairing = typer.Typer(help="Pairing codes of unknown senders: list, approve, reject.")
app.add_typer(pairing, name="pairing")

_Json = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
_Code = Annotated[str, typer.Argument(help="The pairing code the sender received.")]


def _channels(platform: Platform) -> Channels:
    from corral.channels import Channels

    return platform.services.require(Channels)


@app.command("list")
def list_channels(ctx: typer.Context, as_json: _Json = False) -> None:
    """Connected channels with their state (never a secret)."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        service = _channels(platform)
        return [
            {"name": c.name, **await service.check(c.name)}
            for c in await service.store.connections()
        ]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no channels; connect one with the connect tool (kind 'channel')")
        return
    table = Table(
        "name",
        "provider",
        "mode",
        "last inbound",
        "sent",
        "retries",
        "failures",
        "undelivered",
        "error",
    )
    for row in rows:
        table.add_row(
            row["name"],
            row["provider"],
            row["mode"],
            row["lastInboundAt"] or "-",
            str(row["sent"]),
            str(row["retries"]),
            str(row["failures"]),
            str(row["undelivered"]),
            row["lastError"] or "",
        )
    console.print(table)


@pairing.command("list")
def pairing_list(
    ctx: typer.Context,
    every: Annotated[bool, typer.Option("--all", help="Approved and rejected too.")] = False,
    as_json: _Json = False,
) -> None:
    """Pending pairings on the channels you own (all channels for administrators)."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        found = await _channels(platform).pairing.pairings(
            await platform.caller(), status=None if every else "pending"
        )
        return [s.to_json() for s in found]

    rows = run_with_platform(ctx, work)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no pending pairings")
        return
    table = Table("code", "status", "channel", "sender", "chat", "expires", "user")
    for row in rows:
        table.add_row(
            row["code"] or "-",
            row["status"],
            row["connection"],
            row["sender_name"] or row["sender_id"],
            row["chat_id"],
            row["code_expires_at"],
            row["user_id"] or "-",
        )
    console.print(table)


@pairing.command("approve")
def pairing_approve(
    ctx: typer.Context,
    code: _Code,
    user: Annotated[
        str | None, typer.Option(help="The user the sender's messages run as (default: you).")
    ] = None,
    as_json: _Json = False,
) -> None:
    """Approve a code: the sender's next message starts a run as the mapped user."""

    async def work(platform: Platform) -> dict[str, Any]:
        service = _channels(platform)
        sender = await service.pairing.approve(code, await platform.caller(), user=user)
        await service.relay.drained()  # the sender hears it before this process ends
        return sender.to_json()

    record = run_with_platform(ctx, work)
    if as_json:
        print_json(record)
        return
    console.print(
        f"approved {record['sender_name'] or record['sender_id']!r} on channel "
        f"{record['connection']!r}; their messages run as user {record['user_id']}"
    )


@pairing.command("reject")
def pairing_reject(ctx: typer.Context, code: _Code, as_json: _Json = False) -> None:
    """Reject a code: nothing from that sender reaches an agent, and they get no answer."""

    async def work(platform: Platform) -> dict[str, Any]:
        return (await _channels(platform).pairing.reject(code, await platform.caller())).to_json()

    record = run_with_platform(ctx, work)
    if as_json:
        print_json(record)
        return
    if record["status"] != "rejected":
        fail(f"pairing {code!r} is {record['status']}")
    console.print(f"rejected {record['sender_name'] or record['sender_id']!r}")


@app.command("notify")
def notify(
    ctx: typer.Context,
    state: Annotated[
        str | None, typer.Argument(help="on or off; leave out to see the current choice.")
    ] = None,
    as_json: _Json = False,
) -> None:
    """Be told of your new pending decisions (approvals, questions) in your paired chats,
    with buttons to answer them there."""
    if state not in (None, "on", "off"):
        fail(f"notify takes 'on' or 'off', not {state!r}: corral channels notify on")

    async def work(platform: Platform) -> dict[str, Any]:
        enabled = None if state is None else state == "on"
        return await _channels(platform).notifications((await platform.caller()).user_id, enabled)

    shown = run_with_platform(ctx, work)
    if as_json:
        print_json(shown)
        return
    chats = shown["paired_chats"]
    where = ", ".join(f"{c['connection']} chat {c['chat_id']}" for c in chats)
    if not shown["notify"]:
        console.print("notifications of pending decisions are off")
    elif chats:
        console.print(f"notifications of pending decisions are on: sent to {where}")
    else:
        console.print(
            "notifications of pending decisions are on, but you have no paired chat yet: "
            "write to a connected channel's bot and have its pairing code approved"
        )
