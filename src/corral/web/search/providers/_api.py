"""Calling a JSON search API through the fetch pipeline and explaining its error answers."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from corral.web.fetch import ContentKind, Method

from ..env import SearchEnv
from ..provider import ProviderFailed

if TYPE_CHECKING:
    from corral.web.fetch import FetchResponse

__all__ = ["TEXT_ONLY", "call_json", "status_meaning", "text"]

DetailReader = Callable[[Any], str | None]
TEXT_ONLY: tuple[ContentKind, ...] = ("text",)
_TAG = re.compile(r"<[^>]{0,200}>")


def status_meaning(status: int) -> str:
    """What an error status from a search API usually means, and what to do."""
    if status in (401, 403):
        return "the key was refused (missing, invalid or without access); check the configured key"
    if status == 429:
        return "rate limit or quota reached; retry later or use another provider"
    if status in (432, 433):
        return "the plan's usage limit is reached; raise the limit or use another provider"
    if status == 422:
        return "the request or the key was rejected"
    if status >= 500:
        return "the service failed; retrying later may work"
    return "the request was not accepted"


def _decode(response: FetchResponse) -> Any:
    try:
        return json.loads(response.body.decode(response.charset or "utf-8", "replace"))
    except ValueError:
        return None


async def call_json(
    env: SearchEnv,
    label: str,
    url: str,
    *,
    method: Method = "GET",
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    detail: DetailReader | None = None,
) -> Any:
    """Send one API request and return its decoded JSON answer.

    Redirects are not followed (an API that redirects is misconfigured, and credentials must
    not travel on). A non-2xx answer raises :class:`ProviderFailed` naming the status, what
    it usually means and the provider's own explanation when ``detail`` finds one.
    """
    response = await env.fetcher.fetch(
        url,
        method=method,
        headers={"Accept": "application/json", **(headers or {})},
        json=body,
        accept=TEXT_ONLY,
        timeout_ms=env.config.timeout_ms,
        follow_redirects=False,
        raise_for_status=False,
    )
    data = _decode(response)
    if not response.ok:
        said = detail(data) if detail is not None and data is not None else None
        label_status = f"{response.status} {response.reason}".strip()
        message = f"{label} answered HTTP {label_status}: {status_meaning(response.status)}"
        raise ProviderFailed(message + (f" ({said})" if said else ""), status=response.status)
    if data is None:
        raise ProviderFailed(f"{label} answered with a body that is not JSON")
    return data


def text(value: Any, *, markup: bool = False) -> str:
    """A provider field as clean one-line text ('' for missing or non-text values).

    ``markup``: the field may hold HTML highlights (``<strong>``) and entities; drop them.
    """
    if not isinstance(value, str):
        return ""
    if markup:
        value = html.unescape(_TAG.sub("", value))
    return " ".join(value.split())
