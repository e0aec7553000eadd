"""Export configured by the standard OTEL_* variables: spans reach an OTLP endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from corral.tracing import configure_from_environment

PROBE = """
from opentelemetry import trace
from corral.tracing import configure_from_environment, tracer
assert configure_from_environment()
spans = tracer()
assert spans is not None
spans.start_span("corral-probe-span").end()
trace.get_tracer_provider().shutdown()
"""


class Collector(ThreadingHTTPServer):
    received: list[tuple[str, str, bytes]]


class Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector(("127.0.0.1", 0), Handler)
    server.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_an_otlp_endpoint_receives_the_spans(collector: Collector) -> None:
    port = collector.server_address[1]
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_SERVICE_NAME": "corral-export-test",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    ((path, kind, body),) = collector.received
    assert path == "/v1/traces" and kind == "application/x-protobuf"
    assert b"corral-probe-span" in body and b"corral-export-test" in body


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"},
    ],
)
def test_nothing_is_configured_without_an_exporter(env: dict[str, str]) -> None:
    assert configure_from_environment(env) is False
