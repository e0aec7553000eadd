"""Fixtures of the web UI tests: one real uvicorn server on loopback per module, one
Chromium (Debian's, driven by Playwright) for the browser module, a fresh browser context
per test."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from ipaddress import ip_network
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import uvicorn
from fastapi import FastAPI

import corral
from corral.platform import Platform
from corral.server import create_app
from corral.server.ui import sign_in_link
from corral.tools.services import Services
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules
from tests.channels.vendor_servers import FakeTelegram
from tests.sandbox_owner import passable_folder

playwright_sync = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
T = TypeVar("T")


@dataclass
class LiveServer:
    """A platform served by uvicorn in a thread of its own, with its own event loop."""

    base_url: str
    data_dir: Path
    platform: Platform
    app: FastAPI
    loop: asyncio.AbstractEventLoop
    telegram: FakeTelegram
    """A fake Telegram on loopback that the platform's channels may reach."""

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def link(self, user: str | None = None) -> str:
        """A one-time sign-in link for ``user`` (None: the owner), as `corral serve` prints."""
        caller = self.run(self.platform.caller(user))
        return sign_in_link(self.app, caller.user_id, self.base_url)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with passable_folder(tmp_path_factory.mktemp("ui"), "ui") as parent:
        data_dir = parent / "data"
        ready: Future[LiveServer] = Future()
        stop = threading.Event()
        telegram = FakeTelegram().start()

        async def serve() -> None:
            # A socket bound before uvicorn starts: the port is known at once, and a browser
            # that connects early waits in the listen backlog instead of being refused.
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            port = listener.getsockname()[1]
            # Loopback only for the fake vendor: the explicit test allowance of the channel tests.
            web = WebAccess(addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.0/8")))
            async with corral.open(
                data_dir, services=Services(web=web), telegram_api_url=telegram.url
            ) as platform:
                await platform.admin.set_live("web_allowed_ports", str(telegram.port))
                app = create_app(platform)
                uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
                task = asyncio.create_task(uv.serve(sockets=[listener]))
                loop = asyncio.get_running_loop()
                ready.set_result(
                    LiveServer(f"http://127.0.0.1:{port}", data_dir, platform, app, loop, telegram)
                )
                await asyncio.to_thread(stop.wait)
                uv.should_exit = True
                await task
            listener.close()

        thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
        thread.start()
        live = ready.result(timeout=60)
        yield live
        stop.set()
        thread.join(timeout=30)
        telegram.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the browser test module (the only one that drives a browser).

    Module scope, not session: Playwright's sync API keeps its own event loop running in
    this thread until it stops, and the asyncio tests of later modules need the thread's
    loop to themselves."""
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Session:
    """One browser context and page; every request it made is kept for the host check."""

    page: Any
    context: Any
    requests: list[str] = field(default_factory=list)

    def hosts(self) -> set[str]:
        return {urlsplit(url).netloc for url in self.requests if not url.startswith("data:")}


@pytest.fixture
def session(browser: Any, server: LiveServer, tmp_path: Path) -> Iterator[Session]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    opened = Session(page=context.new_page(), context=context)
    context.on("request", lambda request: opened.requests.append(request.url))
    yield opened
    opened.page.screenshot(path=str(tmp_path / "last.png"), full_page=True)
    context.close()
    assert opened.hosts() <= {urlsplit(server.base_url).netloc}, opened.hosts()


def script(tmp_path: Path, *turns: Any) -> str:
    """A model script file (see corral.runtime.models.script); its model string."""
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"
