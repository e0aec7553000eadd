"""CSRF tokens and one-time sign-in links of the web UI.

Sessions themselves are server-side records (:mod:`corral.kernel.ui_sessions`): the cookie
holds a secret, sign-out and ``corral sessions revoke`` end the record. The CSRF token of a
session is an HMAC over its cookie under a key kept in the data folder's private area (mode
0600): a page embeds it, every state-changing request sends it back, and another site can
neither read nor forge it. One-time sign-in links live in memory for the serving process:
``corral serve`` prints one for the local owner, and using it spends it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from corral.files import write_text_atomically

__all__ = ["COOKIE_NAME", "CSRF_FIELD", "CSRF_HEADER", "SessionKeys", "SignInLinks"]

COOKIE_NAME = "corral_session"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"

_KEY_FILE = "ui-session.key"


class SessionKeys:
    """Issues and checks the CSRF tokens of session cookies under one secret key."""

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

    def csrf_token(self, cookie: str) -> str:
        """The CSRF token that belongs to the session ``cookie``."""
        return self._sign("csrf", cookie)

    def csrf_ok(self, cookie: str | None, token: str | None) -> bool:
        """Whether ``token`` is the CSRF token of the session ``cookie``."""
        if not cookie or not token:
            return False
        return hmac.compare_digest(token, self.csrf_token(cookie))


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
