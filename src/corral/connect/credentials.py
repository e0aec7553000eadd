"""The credential store: named values per user and per project, encrypted at rest.

Values are read only by the platform: tools get them through :meth:`CredentialStore.lookup`
(the typed ``credentials`` service), never as arguments, and every value this process
stores or reads is handed to ``on_value`` so result shaping redacts it wherever it would
appear. Listing shows names, scope, provider and ``has_value`` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.connect.credential_injection import InjectAs, Injection
from corral.connect.keyfile import CredentialKey
from corral.errors import ConfigError, NotFound, UsageError
from corral.store import connect_tables as ct
from corral.store.tables import utcnow

__all__ = [
    "NAME_PATTERN",
    "CredentialEntry",
    "CredentialStore",
    "InjectedCredential",
    "Scope",
    "check_name",
]

Scope = Literal["user", "project"]
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
MAX_VALUE_CHARS = 16_384


def check_name(name: str) -> str:
    """``name`` when it is a valid credential name, else a :class:`UsageError`."""
    if not NAME_PATTERN.match(name):
        raise UsageError(
            f"credential name {name!r} is not allowed; use lowercase letters, digits, '_' and "
            "'-', starting with a letter (at most 64), e.g. 'tavily'"
        )
    return name


def check_value(value: str) -> str:
    """The value without surrounding whitespace; empty or oversized values are refused."""
    cleaned = value.strip()
    if not cleaned:
        raise UsageError("the credential value is empty; give the secret to store")
    if len(cleaned) > MAX_VALUE_CHARS:
        raise UsageError(
            f"the credential value is {len(cleaned)} characters; at most {MAX_VALUE_CHARS} "
            "are stored"
        )
    return cleaned


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialEntry:
    """What may be shown of a stored credential: never its value."""

    name: str
    scope: Scope
    provider: str
    has_value: bool
    updated_at: datetime
    injection: Injection | None = None
    """Where the egress proxy may send it, when it is for injection only."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectedCredential:
    """A credential the egress proxy injects: for the proxy's bindings, never a sandbox."""

    name: str
    value: str = field(repr=False)
    injection: Injection


class CredentialStore:
    """Encrypted credentials in the store, keyed by scope, owner and name."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        key: CredentialKey,
        *,
        on_value: Callable[[list[str]], None] = lambda values: None,
    ) -> None:
        self._sessions = sessions
        self._key = key
        self._on_value = on_value
        self._known: set[str] = set()

    # -- reading -------------------------------------------------------------------------

    async def lookup(self, name: str, *, user_id: str) -> str | None:
        """The user's own credential ``name``, else the project's, else None."""
        async with self._sessions() as session:
            rows = list(
                await session.scalars(
                    select(ct.Credential).where(
                        ct.Credential.name == name,
                        or_(
                            (ct.Credential.scope == "user") & (ct.Credential.owner_id == user_id),
                            ct.Credential.scope == "project",
                        ),
                    )
                )
            )
        rows.sort(key=lambda row: row.scope != "user")
        return self._decrypt(rows[0]) if rows else None

    async def entries(self, *, user_id: str) -> list[CredentialEntry]:
        """The user's own credentials and the project's, names only."""
        async with self._sessions() as session:
            rows = await session.scalars(
                select(ct.Credential)
                .where(
                    or_(
                        (ct.Credential.scope == "user") & (ct.Credential.owner_id == user_id),
                        ct.Credential.scope == "project",
                    )
                )
                .order_by(ct.Credential.scope.desc(), ct.Credential.name)
            )
            return [_entry(row) for row in rows]

    async def entry(self, name: str, *, user_id: str, scope: Scope) -> CredentialEntry | None:
        """One credential's public projection, or None when nothing is stored."""
        async with self._sessions() as session:
            row = await session.get(ct.Credential, (scope, _owner(scope, user_id), name))
            return _entry(row) if row is not None else None

    async def injected(self, *, user_id: str) -> list[InjectedCredential]:
        """The user's and the project's credentials that name inject hosts, the user's own
        taking the place of a project one of the same name."""
        found: dict[str, InjectedCredential] = {}
        async with self._sessions() as session:
            rows = list(
                await session.scalars(
                    select(ct.Credential).where(
                        or_(
                            (ct.Credential.scope == "user") & (ct.Credential.owner_id == user_id),
                            ct.Credential.scope == "project",
                        )
                    )
                )
            )
        rows.sort(key=lambda row: row.scope == "user")
        for row in rows:
            injection = _injection(row)
            if injection is not None:
                found[row.name] = InjectedCredential(
                    name=row.name, value=self._decrypt(row), injection=injection
                )
            else:
                found.pop(row.name, None)
        return sorted(found.values(), key=lambda credential: credential.name)

    async def all_values(self) -> list[str]:
        """Every stored value, decrypted: for the redactor only, at start-up."""
        async with self._sessions() as session:
            rows = list(await session.scalars(select(ct.Credential)))
        return [self._decrypt(row) for row in rows]

    # -- writing -------------------------------------------------------------------------

    async def set(
        self,
        name: str,
        value: str,
        *,
        user_id: str,
        scope: Scope = "user",
        provider: str = "",
        injection: Injection | None = None,
    ) -> CredentialEntry:
        """Store ``value`` encrypted under ``name``, replacing an earlier value; ``injection``
        (when given) replaces where the egress proxy may send it, else that is kept."""
        check_name(name)
        value = check_value(value)
        self._remember([value])
        token = self._key.cipher().encrypt(value.encode("utf-8")).decode("ascii")
        owner = _owner(scope, user_id)
        async with self._sessions.begin() as session:
            row = await session.get(ct.Credential, (scope, owner, name))
            if row is None:
                row = ct.Credential(
                    scope=scope,
                    owner_id=owner,
                    name=name,
                    provider=provider,
                    ciphertext=token,
                    created_by=user_id,
                )
                session.add(row)
            else:
                row.ciphertext, row.updated_at = token, utcnow()
                row.provider = provider or row.provider
            if injection is not None:
                row.inject_hosts = list(injection.hosts)
                row.inject_as, row.inject_field = injection.inject_as, injection.field
            await session.flush()
            return _entry(row)

    async def remove(self, name: str, *, user_id: str, scope: Scope = "user") -> None:
        """Delete the credential; a name with nothing stored is :class:`NotFound`."""
        async with self._sessions.begin() as session:
            done = await session.execute(
                delete(ct.Credential).where(
                    ct.Credential.scope == scope,
                    ct.Credential.owner_id == _owner(scope, user_id),
                    ct.Credential.name == name,
                )
            )
        if not getattr(done, "rowcount", 0):
            raise NotFound(
                f"no {scope} credential named {name!r} is stored; "
                "`corral credentials list` shows the stored names"
            )

    async def rotate(self) -> int:
        """Encrypt every value with a fresh key and drop the old one; returns the row count."""
        cipher = self._key.begin_rotation()
        async with self._sessions.begin() as session:
            rows: Sequence[ct.Credential] = list(await session.scalars(select(ct.Credential)))
            for row in rows:
                row.ciphertext = cipher.rotate(row.ciphertext.encode("ascii")).decode("ascii")
        self._key.finish_rotation()
        return len(rows)

    def remember(self, values: list[str]) -> None:
        """Name secret parts of a stored value (a token inside JSON) to the redactor."""
        self._remember([v for v in values if v])

    # -- inside --------------------------------------------------------------------------

    def _decrypt(self, row: ct.Credential) -> str:
        from cryptography.fernet import InvalidToken  # loads with the first credential read

        try:
            value = self._key.cipher().decrypt(row.ciphertext.encode("ascii")).decode("utf-8")
        except InvalidToken:
            raise ConfigError(
                f"stored credential {row.name!r} cannot be decrypted with the key in "
                f"{str(self._key.path)!r}; restore the key file the value was stored with, "
                "or store the value again"
            ) from None
        self._remember([value])
        return value

    def _remember(self, values: list[str]) -> None:
        new = [v for v in values if v not in self._known]
        if new:
            self._known.update(new)
            self._on_value(new)


def _owner(scope: Scope, user_id: str) -> str:
    return user_id if scope == "user" else ""


def _entry(row: ct.Credential) -> CredentialEntry:
    scope: Scope = "project" if row.scope == "project" else "user"
    return CredentialEntry(
        name=row.name,
        scope=scope,
        provider=row.provider,
        has_value=True,
        updated_at=row.updated_at,
        injection=_injection(row),
    )


def _injection(row: ct.Credential) -> Injection | None:
    if not row.inject_hosts:
        return None
    kind = row.inject_as
    inject_as: InjectAs = "query" if kind == "query" else "basic" if kind == "basic" else "header"
    return Injection(hosts=tuple(row.inject_hosts), inject_as=inject_as, field=row.inject_field)
