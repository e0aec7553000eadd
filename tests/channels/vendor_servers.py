"""Loopback servers that speak the vendors' documented HTTP APIs, for the channel tests.

Nothing is mocked: the channels reach these over real sockets through the hardened fetch
path (allowed only by ``AddressRules.unsafe_allowing``). Each server records the calls it
received and lets a test wait for one with a condition, never a sleep.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Call", "FakeSlack", "FakeTelegram", "FakeVendor", "FakeWebhook"]


@dataclass
class Call:
    """One request a fake vendor received."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        call = Call(
            path=self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body
        )
        status, answer = self.server.fake.receive(call)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeVendor

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A poller cancelled mid long-poll hangs up; that is part of the scenarios."""


@dataclass
class FakeVendor:
    """A threaded HTTP server on 127.0.0.1 with recorded calls and injectable failures."""

    calls: list[Call] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)
    """HTTP statuses the next outbound message calls answer with, in order."""
    changed: threading.Condition = field(default_factory=threading.Condition)
    closed: bool = False
    holding: bool = False
    """While set, outbound message calls wait without an answer (a vendor call in flight
    when the sender dies)."""

    def start(self) -> FakeVendor:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def receive(self, call: Call) -> tuple[int, Any]:
        with self.changed:
            self.calls.append(call)
            self.changed.notify_all()
        return self.answer(call)

    def answer(self, call: Call) -> tuple[int, Any]:
        raise NotImplementedError

    def take_failure(self) -> int | None:
        with self.changed:
            self.changed.wait_for(lambda: not self.holding or self.closed)
            return self.failures.pop(0) if self.failures else None

    def hold(self, holding: bool) -> None:
        with self.changed:
            self.holding = holding
            self.changed.notify_all()

    def wait_for(self, done: Callable[[], bool], timeout: float = 15.0) -> bool:
        with self.changed:
            return self.changed.wait_for(done, timeout)


@dataclass
class FakeTelegram(FakeVendor):
    """The Bot API: ``/bot<token>/<method>``; getUpdates long-polls on queued updates."""

    token: str = "123:ABC"
    updates: list[dict[str, Any]] = field(default_factory=list)

    def method_calls(self, method: str) -> list[dict[str, Any]]:
        with self.changed:
            found = [c for c in self.calls if c.path == f"/bot{self.token}/{method}"]
        return [c.json for c in found]

    @property
    def sent(self) -> list[dict[str, Any]]:
        return self.method_calls("sendMessage")

    def push(self, update: dict[str, Any]) -> None:
        with self.changed:
            self.updates.append(update)
            self.changed.notify_all()

    def answer(self, call: Call) -> tuple[int, Any]:
        prefix = f"/bot{self.token}/"
        if not call.path.startswith(prefix):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        method, payload = call.path[len(prefix) :], call.json
        if method == "sendMessage":
            failure = self.take_failure()
            if failure is not None:
                return failure, {
                    "ok": False,
                    "error_code": failure,
                    "description": "Too Many Requests" if failure == 429 else "Bad Gateway",
                    **({"parameters": {"retry_after": 0}} if failure == 429 else {}),
                }
            if len(payload["text"]) > 4096:
                return 400, {"ok": False, "error_code": 400, "description": "message is too long"}
            return 200, {"ok": True, "result": {"message_id": len(self.calls)}}
        if method == "getUpdates":
            offset, wait = int(payload.get("offset", 0)), float(payload.get("timeout", 0))
            with self.changed:
                self.changed.wait_for(
                    lambda: self.closed or any(u["update_id"] >= offset for u in self.updates),
                    wait,
                )
                ready = [u for u in self.updates if u["update_id"] >= offset]
            return 200, {"ok": True, "result": ready}
        if method == "getMe":
            return 200, {"ok": True, "result": {"id": 123, "is_bot": True, "username": "c_bot"}}
        if method == "editMessageText":
            return 200, {"ok": True, "result": {"message_id": payload["message_id"]}}
        if method in ("setWebhook", "deleteWebhook", "answerCallbackQuery"):
            return 200, {"ok": True, "result": True}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}


@dataclass
class FakeSlack(FakeVendor):
    """The Web API's ``chat.postMessage`` and ``chat.update`` with a bot token."""

    token: str = "xoxb-test"

    @property
    def posted(self) -> list[dict[str, Any]]:
        with self.changed:
            return [c.json for c in self.calls if c.path == "/api/chat.postMessage"]

    @property
    def updated(self) -> list[dict[str, Any]]:
        with self.changed:
            return [c.json for c in self.calls if c.path == "/api/chat.update"]

    def answer(self, call: Call) -> tuple[int, Any]:
        if call.path not in ("/api/chat.postMessage", "/api/chat.update", "/api/auth.test"):
            return 404, {"ok": False, "error": "unknown_method"}
        if call.headers.get("authorization") != f"Bearer {self.token}":
            return 200, {"ok": False, "error": "invalid_auth"}
        if call.path == "/api/auth.test":
            return 200, {"ok": True, "team": "corral", "user": "corral_bot"}
        if call.path == "/api/chat.update":
            return 200, {"ok": True, "ts": call.json["ts"]}
        return 200, {"ok": True, "ts": f"1700000000.{len(self.calls):06d}"}


@dataclass
class FakeWebhook(FakeVendor):
    """A custom integration's receiver: checks the HMAC of every POST."""

    secret: str = "whsec"
    bad_signatures: int = 0

    @property
    def received(self) -> list[dict[str, Any]]:
        with self.changed:
            return [c.json for c in self.calls]

    def answer(self, call: Call) -> tuple[int, Any]:
        failure = self.take_failure()
        if failure is not None:
            return failure, {"error": "unavailable"}
        expected = "sha256=" + hmac.new(self.secret.encode(), call.body, hashlib.sha256).hexdigest()
        if call.headers.get("x-corral-signature") != expected:
            self.bad_signatures += 1
            return 401, {"error": "bad signature"}
        return 200, {"ok": True}
