"""A loopback OTLP/HTTP collector: what a Corral process configured by ``OTEL_*`` exports."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Collector(ThreadingHTTPServer):
    received: list[tuple[str, str, bytes]]
    arrived: threading.Condition

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self) -> list[ExportedSpan]:
        found: list[ExportedSpan] = []
        for _, _, body in list(self.received):
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    found.extend(
                        ExportedSpan(
                            s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex()
                        )
                        for s in scope.spans
                    )
        return found

    def wait_for(self, name: str, within: float = 60.0) -> ExportedSpan:
        """The first exported span called ``name``, waiting for an export that brings it."""
        return self.wait_for_all(name, 1, within)[0]

    def wait_for_all(self, name: str, count: int, within: float = 60.0) -> list[ExportedSpan]:
        """The exported spans called ``name``, waiting until there are ``count`` of them."""

        def found() -> list[ExportedSpan]:
            return [s for s in self.spans() if s.name == name]

        with self.arrived:
            self.arrived.wait_for(lambda: len(found()) >= count, timeout=within)
        spans = found()
        assert len(spans) >= count, f"not {count} {name!r} in {[s.name for s in self.spans()]}"
        return spans


@dataclass(frozen=True)
class ExportedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str


class Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.arrived:
            self.server.received.append((self.path, self.headers.get("Content-Type", ""), body))
            self.server.arrived.notify_all()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def running_collector() -> Iterator[Collector]:
    server = Collector(("127.0.0.1", 0), Handler)
    server.received = []
    server.arrived = threading.Condition()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
