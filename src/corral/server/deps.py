"""Request dependencies: the platform and the authenticated caller.

A bearer is an API token or a run's session ticket (``ctk_…``, what a skill's scripts send):
both speak for their user with that user's rights; a ticket also pins *where* its caller
speaks from (:data:`TicketDep`), and is refused once its run has ended."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from corral.kernel.tickets import TICKET_PREFIX, Ticket
from corral.platform import Platform
from corral.policy.identity import Caller

__all__ = [
    "PERSON_ONLY",
    "CallerDep",
    "PersonDep",
    "PlatformDep",
    "TicketDep",
    "platform_of",
    "require_feature",
]

_bearer = HTTPBearer(auto_error=False)

# Every dependency here is ``async def``: FastAPI runs a plain ``def`` dependency in its
# thread pool, a hop of ~0.1-0.3 ms per dependency per request (three of them were most of
# a tool call's cost over HTTP). FastAPI also spends ~10-20 µs per dependency node per
# request walking the tree, so the authenticating ones read the platform off the app
# themselves instead of depending on ``get_platform``.


def platform_of(request: Request) -> Platform:
    platform: Platform = request.app.state.platform
    return platform


async def get_platform(request: Request) -> Platform:
    return platform_of(request)


PlatformDep = Annotated[Platform, Depends(get_platform)]


Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def get_caller(request: Request, credentials: Bearer) -> Caller:
    return await _authenticated(request, credentials)


async def _authenticated(
    request: Request, credentials: HTTPAuthorizationCredentials | None
) -> Caller:
    """The caller ``credentials`` speak for (a ticket is kept on ``request.state``)."""
    platform = platform_of(request)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "send 'Authorization: Bearer <token>'; create one with `corral tokens create USER`",
            headers={"WWW-Authenticate": "Bearer"},
        )
    bearer = credentials.credentials
    if bearer.startswith(TICKET_PREFIX):
        ticket = await platform.identity.tickets.resolve(bearer)
        if ticket is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "this session ticket is dead: the run it belonged to has ended; tickets live "
                "only as long as their run",
                headers={"WWW-Authenticate": "Bearer"},
            )
        request.state.ticket = ticket
        return await platform.caller(ticket.user_id)
    user_id = await platform.identity.user_for_token(bearer)
    if user_id is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "unknown or revoked token",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return await platform.caller(user_id)


CallerDep = Annotated[Caller, Depends(get_caller)]


def _ticket_of(request: Request) -> Ticket | None:
    """The session ticket :func:`get_caller` authenticated the request with, if any."""
    found = getattr(request.state, "ticket", None)
    return found if isinstance(found, Ticket) else None


async def get_ticket(request: Request, caller: CallerDep) -> Ticket | None:
    """The session ticket the request came with (None for an API token)."""
    del caller  # authenticates first
    return _ticket_of(request)


TicketDep = Annotated[Ticket | None, Depends(get_ticket)]


def require_feature(caller: Caller, feature: str) -> None:
    if not caller.grants.has(feature):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"this needs feature {feature!r}, which role {caller.role!r} lacks",
        )


async def get_person(request: Request, credentials: Bearer) -> Caller:
    """The caller, refused when it is a session ticket rather than a person's token.
    Authenticates itself rather than depending on :func:`get_caller`: one dependency level
    less to resolve on every tool call (the route HTTP load hits)."""
    caller = await _authenticated(request, credentials)
    if _ticket_of(request) is not None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "a person decides this: a session ticket (what a skill's scripts send) may not "
            "decide approvals, answer questions, set goals, call tools, change live settings "
            "or issue keys; ask your user to do it",
        )
    return caller


PersonDep = Annotated[Caller, Depends(get_person)]
"""The caller of a route only a person may use (see :data:`PERSON_ONLY`)."""

PERSON_ONLY = Depends(get_person)
"""For a route only a person may use (``dependencies=[PERSON_ONLY]``): tickets are refused,
so an agent's script cannot approve its own calls or step past its run's narrowing."""
