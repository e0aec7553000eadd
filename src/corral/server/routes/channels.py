"""Channel routes: vendors' inbound endpoint, and pairing and connection state for people.

``POST /channels/{name}/inbound`` takes no bearer token: each vendor's own signature is the
authentication (Telegram's secret-token header, Slack's signing secret, the generic
webhook's HMAC); a bad one is 401 and stores nothing. The other routes need a token and
feature ``channels.connect``; pairing decisions are for the connection's owner (or an
administrator). These routes are what the web UI's Channels panel uses.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from corral.channels import ChannelKind, Channels
from corral.connect.credentials import NAME_PATTERN
from corral.errors import InvalidArguments, NotFound
from corral.server.deps import PERSON_ONLY, CallerDep, PlatformDep, require_feature

router = APIRouter(tags=["channels"])

FEATURE = "channels.connect"


class ConnectBody(BaseModel):
    name: str = Field(description="The channel's name (lowercase letters, digits, '_', '-').")
    provider: str = Field(description="telegram, slack or webhook.")
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Secret and public fields by the names GET /channels lists; secrets are "
        "stored encrypted and never returned.",
    )


class ApproveBody(BaseModel):
    user: str | None = Field(
        default=None, description="The user the sender's messages run as (default: you)."
    )


@router.post("/channels/{name}/inbound")
async def inbound(name: str, request: Request, platform: PlatformDep) -> JSONResponse:
    body = await request.body()  # the server's body limit bounds it
    received = await platform.services.require(Channels).receive(name, dict(request.headers), body)
    return JSONResponse(received.body, status_code=received.status)


@router.get("/channels/pairing")
async def pairing_list(
    platform: PlatformDep, caller: CallerDep, status: str | None = "pending"
) -> dict[str, Any]:
    require_feature(caller, FEATURE)
    found = await platform.services.require(Channels).pairing.pairings(caller, status=status)
    return {"pairings": [s.to_json() for s in found]}


@router.post("/channels/pairing/{code}/approve", dependencies=[PERSON_ONLY])
async def pairing_approve(
    code: str, body: ApproveBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    require_feature(caller, FEATURE)
    sender = await platform.services.require(Channels).pairing.approve(code, caller, user=body.user)
    return {"pairing": sender.to_json()}


@router.post("/channels/pairing/{code}/reject", dependencies=[PERSON_ONLY])
async def pairing_reject(code: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    require_feature(caller, FEATURE)
    sender = await platform.services.require(Channels).pairing.reject(code, caller)
    return {"pairing": sender.to_json()}


@router.get("/channels")
async def list_channels(platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    require_feature(caller, FEATURE)
    return await platform.services.require(ChannelKind).list(caller)


@router.post("/channels", status_code=201, dependencies=[PERSON_ONLY])
async def connect_channel(
    body: ConnectBody, platform: PlatformDep, caller: CallerDep
) -> dict[str, Any]:
    """Connect a channel, as the connect tool's ``add`` does (same checks, same answer)."""
    require_feature(caller, FEATURE)
    if not NAME_PATTERN.match(body.name):
        raise InvalidArguments(
            f"channel name {body.name!r} is not lowercase letters, digits, '_', '-'"
        )
    kind = platform.services.require(ChannelKind)
    item = {"kind": "channel", "name": body.name, "provider": body.provider, "fields": body.fields}
    kind.check("add", body.name, item, caller)
    return {"name": body.name, **await kind.apply("add", body.name, item, caller)}


@router.get("/channels/{name}")
async def check_channel(name: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    require_feature(caller, FEATURE)
    state = await platform.services.require(Channels).check(name)
    if state["state"] == "absent":
        raise NotFound(f"no channel named {name!r}; GET /channels lists them")
    return {"name": name, **state}


@router.delete("/channels/{name}", dependencies=[PERSON_ONLY])
async def disconnect_channel(name: str, platform: PlatformDep, caller: CallerDep) -> dict[str, Any]:
    """Disconnect (the owner or an administrator): webhook and polling stop, secrets and
    pairings go; the conversations stay."""
    require_feature(caller, FEATURE)
    kind = platform.services.require(ChannelKind)
    if name not in kind.channels.names:
        raise NotFound(f"no channel named {name!r}; GET /channels lists them")
    return {"name": name, **await kind.apply("remove", name, {}, caller)}
