"""Full-page Markdown for the top research results, through the same fetcher as web_fetch.

Each page is fetched under the platform's fetch policy (public addresses only, redirects
re-checked) and rendered by web_fetch's extraction. A page that cannot be read becomes a
warning naming it and why; the search still answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread

from corral.errors import ToolError

from .env import SearchEnv

__all__ = ["Page", "read_pages"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """The readable text of one result page."""

    url: str
    text: str
    total_chars: int
    title: str | None = None

    @property
    def cut(self) -> bool:
        return len(self.text) < self.total_chars


async def _read(url: str, env: SearchEnv, max_chars: int) -> Page:
    from corral.web.extraction import extract_document

    response = await env.fetcher.fetch(
        url, accept=("text", "pdf"), timeout_ms=env.config.timeout_ms
    )
    if not response.ok:
        raise ToolError(f"it answered HTTP {response.status} {response.reason}".rstrip())
    extraction = await anyio.to_thread.run_sync(
        lambda: extract_document(
            response.body, response.content_type or "", url=response.url, format="markdown"
        )
    )
    if extraction.js_only:
        raise ToolError("its content only appears once a browser runs its scripts")
    text = extraction.text.strip()
    if not text:
        raise ToolError("no readable text was found on it")
    return Page(url=url, text=text[:max_chars], total_chars=len(text), title=extraction.title)


async def read_pages(
    urls: Sequence[str], env: SearchEnv, *, max_chars: int
) -> tuple[list[Page], list[str]]:
    """The pages at ``urls`` that could be read (in order), and a warning for each other."""
    found: list[Page | str | None] = [None] * len(urls)

    async def one(index: int, url: str) -> None:
        try:
            found[index] = await _read(url, env, max_chars)
        except ToolError as exc:
            found[index] = f"page could not be read: {url} ({exc.message})"

    async with anyio.create_task_group() as group:
        for index, url in enumerate(urls):
            group.start_soon(one, index, url)
    pages = [item for item in found if isinstance(item, Page)]
    warnings = [item for item in found if isinstance(item, str)]
    return pages, warnings
