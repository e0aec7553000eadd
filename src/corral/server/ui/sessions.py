"""Browser sessions of the web UI: signed cookies, CSRF tokens and one-time sign-in links.

A session cookie is ``<user id>.<issued>.<nonce>[.<token id>].<signature>``, signed with
HMAC-SHA256 under a key kept in the data folder's private area (mode 0600), so sessions
survive a restart and need no table. The user is re-resolved on every request (a removed
user's cookie stops working), and a session begun with an API token names that token's id:
it ends when the token is revoked. The CSRF token of a session is a second HMAC over the cookie:
a page embeds it, every state-changing request sends it back, and another site can
neither read nor forge it. One-time sign-in links live in memory for the serving
process: ``corral serve`` prints one for the local owner, and using it spends it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from corral.files import write_text_atomically

__all__ = [
    "COOKIE_NAME",
    "CSRF_FIELD",
    "CSRF_HEADER",
    "SESSION_SECONDS",
    "BrowserSession",
    "SessionKeys",
    "SignInLinks",
]

COOKIE_NAME = "corral_session"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SESSION_SECONDS = 7 * 24 * 3600
"""A session lasts a week from sign-in."""

_KEY_FILE = "ui-session.key"


class SessionKeys:
    """Issues and checks session cookies and their CSRF tokens under one secret key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def in_private_dir(cls, private_dir: Path) -> SessionKeys:
        """The key stored at ``<private_dir>/ui-session.key``, created on first use."""
        path = private_dir / _KEY_FILE
        if not path.exists():
            write_text_atomically(private_dir, path, secrets.token_hex(32))
        return cls(bytes.fromhex(path.read_text().strip()))

    def _sign(self, purpose: str, text: str) -> str:
        message = f"{purpose}:{text}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def issue(self, user_id: str, token_id: str | None = None) -> str:
        """A new session cookie value for ``user_id``; ``token_id`` names the API token it
        was begun with (the session ends when that token is revoked)."""
        body = f"{user_id}.{int(time.time())}.{secrets.token_hex(8)}"
        if token_id is not None:
            body += f".{token_id}"
        return f"{body}.{self._sign('session', body)}"

    def session_of(self, cookie: str | None) -> BrowserSession | None:
        """The session a valid, unexpired cookie stands for; None for anything else."""
        if not cookie or cookie.count(".") < 3:
            return None
        body, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature, self._sign("session", body)):
            return None
        parts = body.split(".")
        if len(parts) not in (3, 4):
            return None
        user_id, issued = parts[0], parts[1]
        if not issued.isdigit() or time.time() - int(issued) > SESSION_SECONDS:
            return None
        return BrowserSession(user_id=user_id, token_id=parts[3] if len(parts) == 4 else None)

    def user_of(self, cookie: str | None) -> str | None:
        """The user a valid, unexpired cookie belongs to; None for anything else."""
        found = self.session_of(cookie)
        return None if found is None else found.user_id

    def csrf_token(self, cookie: str) -> str:
        """The CSRF token that belongs to the session ``cookie``."""
        return self._sign("csrf", cookie)

    def csrf_ok(self, cookie: str | None, token: str | None) -> bool:
        """Whether ``token`` is the CSRF token of the session ``cookie``."""
        if not cookie or not token:
            return False
        return hmac.compare_digest(token, self.csrf_token(cookie))


@dataclass(frozen=True, slots=True)
class BrowserSession:
    """Whose session a cookie is, and the API token it was begun with (None: a link)."""

    user_id: str
    token_id: str | None = None


@dataclass(slots=True)
class SignInLinks:
    """One-time sign-in codes of this serving process: each signs one user in, once."""

    ttl_seconds: float = 15 * 60
    _codes: dict[str, tuple[str, float]] = field(default_factory=dict)

    def create(self, user_id: str) -> str:
        """A fresh code for ``user_id``, valid for ``ttl_seconds`` and a single use."""
        code = secrets.token_urlsafe(24)
        self._codes[code] = (user_id, time.monotonic() + self.ttl_seconds)
        return code

    def spend(self, code: str) -> str | None:
        """The user of ``code``, which is used up; None when unknown, spent or expired."""
        found = self._codes.pop(code, None)
        if found is None or time.monotonic() > found[1]:
            return None
        return found[0]
