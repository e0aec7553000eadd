"""Export configured by the standard OTEL_* variables: spans reach an OTLP endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from corral.tracing import configure_from_environment
from tests.otlp_collector import Collector, running_collector

PROBE = """
from opentelemetry import trace
from corral.tracing import configure_from_environment, tracer
assert configure_from_environment()
spans = tracer()
assert spans is not None
spans.start_span("corral-probe-span").end()
trace.get_tracer_provider().shutdown()
"""


@pytest.fixture
def collector() -> Iterator[Collector]:
    with running_collector() as server:
        yield server


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
