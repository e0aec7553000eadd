"""The access log never shows an OAuth redirect's query.

The authorization code a person's browser brings to the callback route is single use, but
until it is used it is worth a token to whoever reads it, and the ``state`` beside it is what
ties it to the connection waiting for it. uvicorn's access log writes every request line with
its query, so :class:`OAuthQueryFilter` replaces the query of a request to the callback path
— however its path is spelt (percent-encoded, doubled or trailing slashes, behind a proxy's
prefix) — and of any request whose query carries a ``code`` or ``state``, with a marker.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import parse_qs, unquote

__all__ = ["HIDDEN", "OAuthQueryFilter", "hide_oauth_queries"]

HIDDEN = "[query hidden]"
ACCESS_LOGGER = "uvicorn.access"
_PATH_ARG = 2
"""uvicorn's access record args: client, method, path with query, HTTP version, status."""
_SECRET_KEYS = frozenset({"code", "state"})


def _normal(path: str) -> str:
    return re.sub(r"/+", "/", unquote(path)).rstrip("/")


class OAuthQueryFilter(logging.Filter):
    """Rewrites the path argument of access records to hide OAuth redirect queries."""

    def __init__(self, callback_paths: Iterable[str]) -> None:
        super().__init__()
        self._paths = tuple(_normal(p) for p in callback_paths)

    def hides(self, target: str) -> bool:
        """Whether the request line ``target`` (path and query) keeps its query out."""
        path, _, query = target.partition("?")
        if not query:
            return False
        if _normal(path).endswith(self._paths):
            return True
        keys = {key.strip().lower() for key in parse_qs(query, keep_blank_values=True)}
        return not keys.isdisjoint(_SECRET_KEYS)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > _PATH_ARG:
            target = args[_PATH_ARG]
            if isinstance(target, str) and self.hides(target):
                path = target.partition("?")[0]
                record.args = (*args[:_PATH_ARG], f"{path}?{HIDDEN}", *args[_PATH_ARG + 1 :])
        return True


def hide_oauth_queries(callback_paths: Iterable[str]) -> None:
    """Install the filter on uvicorn's access logger (once per process)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, OAuthQueryFilter) for f in logger.filters):
        logger.addFilter(OAuthQueryFilter(callback_paths))
