"""The key two result URLs share when they name the same page, for de-duplication.

Providers spell one page differently: ``http`` or ``https``, with or without ``www.``, a
trailing slash, a fragment, tracking parameters (``utm_*``, ``gclid``…) or parameters in
another order. :func:`url_key` removes exactly those differences and nothing else.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

__all__ = ["url_key"]

_TRACKING = frozenset(
    {"gclid", "fbclid", "msclkid", "dclid", "mc_cid", "mc_eid", "ref_src", "igshid", "yclid"}
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in _TRACKING


def url_key(url: str) -> str:
    """A normalised form of ``url``: equal keys mean the same page."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    host = (parts.hostname or "").rstrip(".").lower()
    if host.startswith("www."):
        host = host[4:]
    scheme = parts.scheme.lower()
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    path = parts.path
    if "%" in path:
        # Decode then re-encode so %7E and ~ (or %2f and %2F) compare equal.
        path = quote(unquote(path), safe="/:@!$&'()*+,;=-._~")
    path = path.rstrip("/") or "/"
    if not parts.query:
        return host + path
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _tracking(k)]
    encoded = urlencode(sorted(query))
    return f"{host}{path}" + (f"?{encoded}" if encoded else "")
