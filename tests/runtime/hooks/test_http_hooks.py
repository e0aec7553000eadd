"""`http` hooks against a real loopback server: same JSON posted, body read like stdout."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.runtime.hooks.conftest import MakeHooks


class _Recorder(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]
    answers: dict[str, tuple[int, bytes]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        self.received.append(
            {"path": self.path, "headers": dict(self.headers),
             "body": json.loads(self.rfile.read(length))}
        )  # fmt: skip
        status, body = self.answers[self.path]
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Recorder", (_Recorder,), {"received": [], "answers": {}})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def http_hook(url: str, **options: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url, **options}]}]}


async def test_an_http_hook_receives_the_input_and_its_answer_counts(
    make_hooks: MakeHooks, server: tuple[str, type[_Recorder]]
) -> None:
    base, recorder = server
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "not on Fridays"}}  # fmt: skip
    recorder.answers["/check"] = (200, json.dumps(deny).encode())
    hooks = make_hooks(http_hook(f"{base}/check", headers={"X-Team": "ops"}))
    outcome = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="execute")
    assert outcome.blocked and outcome.reason == "blocked by hook 127.0.0.1/check: not on Fridays"
    (seen,) = recorder.received
    assert seen["headers"]["X-Team"] == "ops"
    assert seen["body"]["tool_input"] == {"command": "ls"}
    assert seen["body"]["hook_event_name"] == "PreToolUse"


async def test_an_http_error_is_a_hook_error(
    make_hooks: MakeHooks, server: tuple[str, type[_Recorder]]
) -> None:
    base, recorder = server
    recorder.answers["/down"] = (503, b"maintenance")
    hooks = make_hooks(http_hook(f"{base}/down"))
    blocked = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="execute")
    assert blocked.blocked and blocked.reason.endswith("the hook failed: answered HTTP 503")
    recorder.answers["/empty"] = (200, b"")
    hooks = make_hooks(http_hook(f"{base}/empty"))
    silent = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="execute")
    assert silent.decision is None and silent.records[0].outcome == "no_opinion"
