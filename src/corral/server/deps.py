"""Request dependencies: the platform and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from corral.platform import Platform
from corral.policy.identity import Caller

__all__ = ["CallerDep", "PlatformDep", "require_feature"]

_bearer = HTTPBearer(auto_error=False)


def get_platform(request: Request) -> Platform:
    platform: Platform = request.app.state.platform
    return platform


PlatformDep = Annotated[Platform, Depends(get_platform)]


async def get_caller(
    platform: PlatformDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "send 'Authorization: Bearer <token>'; create one with `corral tokens create USER`",
            headers={"WWW-Authenticate": "Bearer"},
        )
    user_id = await platform.identity.user_for_token(credentials.credentials)
    if user_id is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "unknown or revoked token",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return await platform.caller(user_id)


CallerDep = Annotated[Caller, Depends(get_caller)]


def require_feature(caller: Caller, feature: str) -> None:
    if not caller.grants.has(feature):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"this needs feature {feature!r}, which role {caller.role!r} lacks",
        )
