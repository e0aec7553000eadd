"""Recognising secrets: names and values that must never reach a child process or a model.

Shared by the shell environment builder and by result shaping, so both judge a secret the
same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["Redactor", "is_secret_name", "looks_like_secret_value"]

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|(^|_)PWD$|(^|_)PASS($|_)|KEY($|_|S$)|APIKEY"
    r"|AUTH(?!OR)|CREDENTIAL|PRIVATE|COOKIE|SESSION|SIGNATURE|BEARER|JWT|DSN$"
    r"|CONN(ECTION)?_?STR)",
    re.IGNORECASE,
)

# Prefixes of widely used API keys and tokens; a value starting with one is a secret
# whatever its variable is called.
_KEY_PREFIXES = (
    "sk-",  # OpenAI, Anthropic (sk-ant-)
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "hf_",
    "npm_",
    "pypi-",
    "tvly-",
    "SG.",
    "shpat_",
    "dop_v1_",
    "eyJ",  # a JWT
    "gsk_",
    "r8_",
    "pplx-",
    "lin_api_",
    "xoxs-",
    "xoxr-",
    "glsa_",
    "AGE-SECRET-KEY-",
)

_SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
    r"|-----BEGIN OPENSSH PRIVATE KEY-----"
    r"|-----BEGIN PGP PRIVATE KEY BLOCK-----"
    r"|[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"  # scheme://user:pass@host
    r"|^\s*(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{16,}\s*$"  # an Authorization header value
)


# The shell's working folders match ``_PWD`` but hold paths: redacting them would hide
# every path under the process's folder in results.
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})


def is_secret_name(name: str) -> bool:
    """True when an environment variable's name suggests it holds a secret."""
    if name.upper() in _NOT_SECRET:
        return False
    return bool(_SECRET_NAME.search(name))


def looks_like_secret_value(value: str) -> bool:
    """True when a value itself looks like a credential, whatever it is named."""
    stripped = value.strip()
    if stripped.startswith(_KEY_PREFIXES) and len(stripped) >= 16 and " " not in stripped:
        return True
    return bool(_SECRET_VALUE.search(value))


class Redactor:
    """Replaces known secret values in text with a fixed marker.

    Built once from the secret values the platform knows (its own environment's secrets,
    stored credentials); applying it costs one regex pass.
    """

    marker = "[redacted]"

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(self.marker, text)

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds a known secret (cheaper than redacting when it does not)."""
        return self._pattern is not None and self._pattern.search(text) is not None

    @property
    def active(self) -> bool:
        return self._pattern is not None
