"""What a request becomes when the server redirects it.

The fetcher follows redirects by hand so each hop is judged from scratch; this module only
decides the next request's method, body and headers:

* 303 turns anything but HEAD into a body-less GET; 301 and 302 do so for POST (what
  browsers do and servers expect); 307 and 308 keep method and body.
* On a hop to another origin (scheme, host or port), credentials are dropped:
  ``Authorization``, ``Cookie`` and any header whose name looks like a key or token.
* A request with a body is never re-sent to another origin: :func:`may_follow` says no, and
  the 307/308 answer is returned to the caller instead, because bodies (search APIs) may
  hold keys.
"""

from __future__ import annotations

from dataclasses import replace

from .request import Outgoing

__all__ = ["REDIRECT_STATUSES", "is_credential_header", "may_follow", "redirected"]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

_CREDENTIAL_WORDS = ("auth", "cookie", "token", "key", "secret", "session", "password", "sig")
_BODY_HEADERS = frozenset({"content-type", "content-encoding", "content-language", "digest"})


def is_credential_header(name: str) -> bool:
    """Whether a header may carry a credential that must not cross origins."""
    lowered = name.lower()
    return any(word in lowered for word in _CREDENTIAL_WORDS)


def _keeps_body(method: str, status: int) -> bool:
    return status in (307, 308) or (status in (301, 302) and method != "POST")


def may_follow(outgoing: Outgoing, status: int, *, cross_origin: bool) -> bool:
    """Whether to follow a ``status`` redirect at all (see the module doc)."""
    if status not in REDIRECT_STATUSES:
        return False
    resends_body = outgoing.body is not None and _keeps_body(outgoing.method, status)
    return not (cross_origin and resends_body)


def redirected(outgoing: Outgoing, status: int, *, cross_origin: bool) -> Outgoing:
    """The request to send to the ``Location`` of a ``status`` redirect."""
    method, body = outgoing.method, outgoing.body
    if not _keeps_body(method, status):
        method, body = ("HEAD" if method == "HEAD" else "GET"), None
    headers = outgoing.headers
    if body is None:
        headers = tuple((k, v) for k, v in headers if k.lower() not in _BODY_HEADERS)
    if cross_origin:
        headers = tuple((k, v) for k, v in headers if not is_credential_header(k))
    return replace(outgoing, method=method, headers=headers, body=body)
