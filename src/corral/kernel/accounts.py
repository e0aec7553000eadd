"""Users, roles and API tokens."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import NotFound, UsageError
from corral.kernel.config import ConfigCache, bump_config_version
from corral.kernel.tickets import TICKET_PREFIX, Tickets
from corral.kernel.tokens import TokenLookup, hash_token
from corral.policy.grants import BUILTIN_ROLES, validate_feature_pattern
from corral.store import tables as t
from corral.store.meta_reads import MetaRead, MetaReader

__all__ = ["Identity", "NewToken"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
TOKEN_PREFIX = "corral_"


@dataclass(frozen=True, slots=True)
class NewToken:
    id: str
    token: str  # shown once; only its hash is stored


class Identity:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        config: ConfigCache,
        read_meta: MetaRead | None = None,
        reader: MetaReader | None = None,
    ) -> None:
        self._sessions = sessions
        self._config = config
        self.tokens = TokenLookup(sessions, read_meta=read_meta)
        self.tickets = Tickets(sessions, reader=reader)

    async def create_role(self, name: str, features: list[str], description: str = "") -> None:
        if not _NAME.match(name):
            raise UsageError(f"role name {name!r} may hold letters, digits, '_', '.', '-' only")
        if name in BUILTIN_ROLES:
            raise UsageError(f"{name!r} is a built-in role; choose another name")
        try:
            checked = [validate_feature_pattern(f) for f in features]
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        async with self._sessions.begin() as session:
            role = await session.get(t.Role, name)
            if role is None:
                session.add(t.Role(name=name, features=checked, description=description))
            else:
                role.features, role.description = checked, description
            await bump_config_version(session)
        self._config.invalidate()

    async def create_user(self, name: str, role: str = "member") -> str:
        if not _NAME.match(name):
            raise UsageError(f"user name {name!r} may hold letters, digits, '_', '.', '@', '-'")
        user_id = "u_" + secrets.token_hex(6)
        try:
            async with self._sessions.begin() as session:
                if await session.get(t.Role, role) is None:
                    raise NotFound(f"no role {role!r}; create it first or use owner/admin/member")
                session.add(t.User(id=user_id, name=name, role=role))
                await bump_config_version(session)
        except IntegrityError:
            raise UsageError(f"a user named {name!r} already exists") from None
        self._config.invalidate()
        return user_id

    async def set_role(self, user: str, role: str) -> None:
        async with self._sessions.begin() as session:
            row = await self._user_row(session, user)
            if await session.get(t.Role, role) is None:
                raise NotFound(f"no role {role!r}")
            if row.role == "owner" and role != "owner":
                owners = await session.scalars(select(t.User.id).where(t.User.role == "owner"))
                if len(list(owners)) <= 1:
                    raise UsageError("the last owner cannot lose the owner role")
            row.role = role
            await bump_config_version(session)
        self._config.invalidate()

    async def _user_row(self, session: AsyncSession, user: str) -> t.User:
        row = await session.get(t.User, user)
        if row is None:
            row = await session.scalar(select(t.User).where(t.User.name == user))
        if row is None:
            raise NotFound(f"no user {user!r}; `corral users list` shows them")
        return row

    async def create_token(self, user: str, name: str = "api") -> NewToken:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token_id = "tok_" + secrets.token_hex(6)
        async with self._sessions.begin() as session:
            row = await self._user_row(session, user)
            session.add(
                t.ApiToken(id=token_id, user_id=row.id, name=name, token_hash=hash_token(token))
            )
            await bump_config_version(session)  # running servers take the token at once
        self.tokens.invalidate()
        return NewToken(id=token_id, token=token)

    async def revoke_token(self, token_id: str) -> None:
        async with self._sessions.begin() as session:
            outcome = await session.execute(
                update(t.ApiToken)
                .where(t.ApiToken.id == token_id, t.ApiToken.revoked_at.is_(None))
                .values(revoked_at=t.utcnow())
            )
            await bump_config_version(session)  # every process refuses it from now on
        self.tokens.invalidate()
        if getattr(outcome, "rowcount", 0) != 1:
            raise NotFound(f"no active token {token_id!r}")

    async def user_for_token(self, token: str) -> str | None:
        """The user id an API token or a live run ticket belongs to; None for an unknown,
        revoked or dead one."""
        if token.startswith(TICKET_PREFIX):
            ticket = await self.tickets.resolve(token)
            return None if ticket is None else ticket.user_id
        return await self.tokens.user_for(token)
