"""The page's walls in real Chromium: the Content-Security-Policy lets the page's own scripts
work and stops an outside image (a loopback sink sees no request), a model's Markdown image
from elsewhere is a link, the API docs load only from this server, and every response
carries the security headers. Sign-out and `corral sessions revoke` end a session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.server.security_headers import CONTENT_SECURITY_POLICY
from corral.server.ui.sessions import COOKIE_NAME
from tests.server.ui.conftest import LiveServer, Session, script
from tests.server.ui.test_browser import _send, _sign_in, _start

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect

# Installed before any page script: every policy violation the page meets is kept.
_RECORD_VIOLATIONS = """
window.violations = [];
document.addEventListener("securitypolicyviolation", (evt) => {
  window.violations.push(evt.violatedDirective + " " + evt.blockedURI);
});
"""


class _Sink(BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def sink() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback that records every request it gets: its address, the list."""
    seen: list[str] = []
    handler = type("Sink", (_Sink,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    thread.join(timeout=10)
    httpd.server_close()


def test_the_page_works_under_the_policy_and_an_outside_image_is_never_fetched(
    session: Session, server: LiveServer, tmp_path: Path, sink: tuple[str, list[str]]
) -> None:
    address, seen = sink
    page = session.page
    session.context.add_init_script(_RECORD_VIOLATIONS)
    _sign_in(session, server)
    pixel = f"{address}/pixel.png?leak=the-secret"
    model = script(tmp_path, {"text": f"Here you are: ![a pixel]({pixel}) **done**"})
    _start(session, model, "auto", "csp")
    _send(page, "show me")  # Enter sends: corral.js; the answer streams: htmx and its SSE
    answer = page.locator("#timeline .answer").last
    expect(answer.locator("strong")).to_have_text("done")
    expect(answer.locator("a", has_text="a pixel")).to_have_attribute("href", pixel)
    expect(answer.locator("img")).to_have_count(0)
    assert page.evaluate("window.violations") == []  # the page's own parts all passed

    blocked = page.evaluate(
        """(src) => new Promise((resolve) => {
          document.addEventListener("securitypolicyviolation",
            (evt) => resolve(evt.violatedDirective), {once: true});
          document.getElementById("timeline").insertAdjacentHTML(
            "beforeend", `<img id="injected" src="${src}">`);
        })""",
        pixel,
    )
    assert blocked.startswith("img-src")
    page.reload()
    expect(page.locator("#timeline .answer strong").last).to_have_text("done")
    assert seen == []
    # Playwright reports the attempt the policy blocked; the sink shows none went out.
    session.requests[:] = [url for url in session.requests if not url.startswith(address)]


def test_the_api_docs_load_from_this_server_only(session: Session, server: LiveServer) -> None:
    page = session.page
    session.context.add_init_script(_RECORD_VIOLATIONS)
    page.goto(server.base_url + "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Corral")
    expect(page.locator(".opblock-tag").first).to_be_visible()
    assert page.evaluate("window.violations") == []
    # The session fixture checks that no request left for another host.


def test_every_response_carries_the_security_headers(server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url) as client:
        for path in ("/ui/sign-in", "/health", "/docs", "/ui/static/corral.js", "/nowhere"):
            response = client.get(path)
            headers = response.headers
            assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
            assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
            assert "script-src 'self'" in CONTENT_SECURITY_POLICY
            assert headers["x-content-type-options"] == "nosniff", path
            assert headers["referrer-policy"] == "same-origin", path
        assert client.get("/redoc").status_code == 404
        favicon = client.get("/favicon.ico")
        assert favicon.status_code == 200 and favicon.headers["content-type"] == "image/svg+xml"


def _corral(server: LiveServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORRAL_DATA_DIR": str(server.data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "corral", *args], capture_output=True, text=True, env=env
    )


def _signed_in_cookie(client: httpx.Client, server: LiveServer) -> str:
    assert client.get(server.link()).status_code == 303
    return client.cookies[COOKIE_NAME]


def test_sign_out_and_revocation_end_the_session(session: Session, server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url) as client:
        cookie = _signed_in_cookie(client, server)
        page = client.get("/ui")
        assert page.status_code == 200
        csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        assert client.post("/ui/sign-out", data={"csrf_token": csrf}).status_code == 303
    with httpx.Client(base_url=server.base_url, cookies={COOKIE_NAME: cookie}) as old:
        again = old.get("/ui")
        assert again.status_code == 303 and again.headers["location"] == "/ui/sign-in"

    page = session.page
    page.goto(server.link())
    expect(page.locator("#conversation-list")).to_be_visible()
    listed = _corral(server, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [s["id"] for s in json.loads(listed.stdout)]
    assert cookie.partition(".")[0] not in ids  # the signed-out one is not listed
    newest = ids[-1]  # the browser's
    revoked = _corral(server, "sessions", "revoke", newest)
    assert revoked.returncode == 0 and f"revoked {newest}" in revoked.stdout, revoked.stderr
    page.reload()
    expect(page).to_have_url(server.base_url + "/ui/sign-in")
    unknown = _corral(server, "sessions", "revoke", newest)
    assert unknown.returncode != 0 and "corral sessions list" in unknown.stderr
    assert "Traceback" not in unknown.stderr
