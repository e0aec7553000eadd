"""uvicorn's access log, as the served app writes it, never shows an OAuth callback's code
or state, however the request spells the path or the parameter; other queries stay."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest
from uvicorn.logging import AccessFormatter

from corral.packages.core.mcp_servers import CALLBACK_PATH
from corral.platform import Platform
from corral.server.access_log import HIDDEN, OAuthQueryFilter
from corral.server.app import create_app
from tests.server.loopback import serving


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s'))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def access_lines() -> Iterator[Lines]:
    logger = logging.getLogger("uvicorn.access")
    lines, level = Lines(), logger.level
    yield lines
    logger.removeHandler(lines)
    logger.setLevel(level)


async def test_the_access_log_hides_callback_codes(platform: Platform, access_lines: Lines) -> None:
    targets = [
        f"{CALLBACK_PATH}?state=st-one&code=SECRET-1",
        "/connect/oauth//callback/?code=SECRET-2&state=st-two",
        "/connect/oauth/%63allback?code=SECRET-3",
        "/elsewhere?%63ode=SECRET-4",
        "/docs?page=still-shown",
    ]
    async with serving(create_app(platform)) as base:
        access = logging.getLogger("uvicorn.access")  # uvicorn configured it on start
        access.addHandler(access_lines)
        access.setLevel(logging.INFO)  # serving() logs warnings only
        async with httpx.AsyncClient(base_url=base) as browser:
            for target in targets:
                await browser.get(target)
    logged = "\n".join(access_lines.lines)
    assert len(access_lines.lines) == len(targets), logged
    for secret in ("SECRET-1", "SECRET-2", "SECRET-3", "SECRET-4", "st-one", "st-two"):
        assert secret not in logged
    assert f"{CALLBACK_PATH}?{HIDDEN}" in logged
    assert "/docs?page=still-shown" in logged


@pytest.mark.parametrize(
    ("target", "hidden"),
    [
        ("/connect/oauth/callback?code=c&state=s", True),
        ("/connect/oauth/callback?c", True),  # the route's own path: whatever the query
        ("/proxy/prefix/connect/oauth/callback?code=c", True),
        ("/CONNECT/oauth/callback?x=1", False),  # another route (paths are case-sensitive)
        ("/ui/anything?Code=c", True),
        ("/ui/anything?a=1&state=s", True),
        ("/ui/anything?%73tate=s", True),
        ("/ui/anything? code=c", True),
        ("/ui/anything?encode=c&codes=2", False),
        ("/connect/oauth/callback", False),  # nothing to hide
    ],
)
def test_which_request_lines_lose_their_query(target: str, hidden: bool) -> None:
    assert OAuthQueryFilter([CALLBACK_PATH]).hides(target) is hidden
