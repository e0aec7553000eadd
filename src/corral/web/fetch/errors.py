"""The one error the fetch pipeline raises, with its stable codes.

Every refusal and failure of :class:`~corral.web.fetch.Fetcher` is a :class:`FetchError`,
a :class:`corral.errors.ToolError`, so a tool handler can let it propagate and the model
reads the message. ``code`` is one of :data:`FetchErrorCode`:

=====================  ================================================================
``bad_url``            the URL (or an ``allow_hosts`` entry) cannot be parsed, carries
                       credentials, or spells its host ambiguously
``blocked_scheme``     a scheme other than http or https
``blocked_host``       a host name refused by name: ``localhost``, local-only suffixes,
                       single-label names, the administrator deny-list, or a host
                       outside the call's ``allow_hosts``
``blocked_port``       a port outside the administrator's allowed ports
``blocked_address``    the host is, or resolves to, a non-public address
``dns_failure``        the host name does not resolve
``network_error``      the connection failed: refused, reset, TLS verification
``timeout``            ``timeout_ms`` ran out (DNS, connect, redirects and body together)
``too_many_redirects`` more redirect hops than the policy allows
``too_large``          the body is larger than the ceiling for its content kind
``unsupported_content`` a content kind the caller did not accept, or an encoding we
                       cannot decode
``http_error``         a non-2xx answer, only when the caller asked for it
=====================  ================================================================

``data`` always holds ``url`` (the URL of the hop that failed) and, where it applies,
``host``, ``address``, ``port``, ``status``, ``limit`` and ``setting``.

Messages reach the model, so query parameters that look like credentials (``api_key=…``,
``token=…``) are redacted from the message and from ``data`` strings.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from corral.errors import ToolError

__all__ = ["FetchError", "FetchErrorCode", "redact"]

FetchErrorCode = Literal[
    "bad_url",
    "blocked_scheme",
    "blocked_host",
    "blocked_port",
    "blocked_address",
    "dns_failure",
    "network_error",
    "timeout",
    "too_many_redirects",
    "too_large",
    "unsupported_content",
    "http_error",
]


_CREDENTIAL_PARAM = re.compile(
    r"(?i)([?&;][^=&#\s'\"]*(?:key|token|secret|auth|sig|password|passwd|session)"
    r"[^=&#\s'\"]*=)[^&#\s'\"]+"
)


def redact(text: str) -> str:
    """``text`` with the values of credential-like query parameters replaced."""
    return _CREDENTIAL_PARAM.sub(r"\1[redacted]", text)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value


class FetchError(ToolError):
    """A fetch that was refused or failed; ``code`` says which way (see the module doc)."""

    default_code = "network_error"

    def __init__(
        self,
        message: str,
        *,
        code: FetchErrorCode,
        url: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        details = {key: _redacted(value) for key, value in (data or {}).items()}
        if url is not None:
            details.setdefault("url", redact(url))
        super().__init__(redact(message), code=code, data=details)
        self.fetch_code: FetchErrorCode = code

    def at(self, url: str) -> FetchError:
        """Record the URL of the hop that failed when the raiser did not know it."""
        self.data.setdefault("url", redact(url))
        return self
