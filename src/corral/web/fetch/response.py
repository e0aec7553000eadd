"""What a fetch returns."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from .body import ContentKind
from .errors import FetchError

__all__ = ["FetchResponse", "Hop"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Hop:
    """One redirect that was followed: the URL that answered, its status and address."""

    url: str
    status: int
    address: str | None
    location: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    """The final answer of a fetch, after redirects, with the whole (decoded) body.

    Non-2xx answers are returned like any other unless the call asked for
    ``raise_for_status``; :attr:`ok` and :meth:`raise_for_status` help the caller decide.
    """

    url: str
    """The final URL (canonical form, no fragment)."""
    status: int
    reason: str
    headers: httpx.Headers
    content_type: str | None
    """The ``Content-Type`` header as sent, or ``None``."""
    media_type: str
    """Lowercase ``type/subtype`` without parameters; empty when the server sent none."""
    charset: str | None
    kind: ContentKind
    """Which ceiling applied: text-like, PDF or other (sniffed when the type was vague)."""
    body: bytes
    redirects: tuple[Hop, ...]
    """Every redirect followed, in order; the final URL is :attr:`url`."""
    address: str | None
    """The IP address the final request was sent to."""
    elapsed_ms: float
    """Time from the start of the fetch to the end of the body, redirects included."""

    @property
    def ok(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status < 300

    def raise_for_status(self) -> None:
        """Raise an ``http_error`` :class:`FetchError` unless the status is 2xx."""
        if not self.ok:
            raise http_error(self.url, self.status, self.reason)


def http_error(url: str, status: int, reason: str) -> FetchError:
    """The ``http_error`` for a non-2xx answer, with advice that fits the status."""
    if status in (401, 403):
        advice = "the page needs a login or refuses automated clients; try another source"
    elif status in (404, 410):
        advice = "the page does not exist; check the URL or search for its current address"
    elif status == 429:
        advice = "the site is rate-limiting; wait before retrying or use another source"
    elif status >= 500:
        advice = "the server failed; retrying later may work"
    else:
        advice = "the server did not return the page"
    label = f"{status} {reason}".strip()
    return FetchError(
        f"{url!r} answered {label}: {advice}",
        code="http_error",
        url=url,
        data={"status": status},
    )
