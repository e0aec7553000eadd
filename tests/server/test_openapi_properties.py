"""Property-based tests of the whole HTTP API from its own OpenAPI document (Schemathesis):
for every operation, generated requests (valid and invalid) never get a 500, and every
documented response matches its schema. Runs against `corral serve` in a real process.

Each operation gets its own Hypothesis run, seeded and derandomized, so a run is repeatable;
every operation runs even after one fails, and the failures are reported together."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.server.test_server import cli, server

__all__ = ["server"]  # the fixture these tests use

CONFIG = SchemathesisConfig.from_dict({"seed": 30, "generation": {"deterministic": True}})
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
EXAMPLES = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def test_no_generated_request_gets_a_500_or_an_off_schema_answer(
    server: str, data_dir: Path
) -> None:
    token = cli(data_dir, "tokens", "create", "owner").strip().splitlines()[-1]
    owner = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json", config=CONFIG)
    failures: list[str] = []
    took: dict[str, float] = {}
    for found in schema.get_all_operations():
        operation = found.ok()

        @EXAMPLES
        @given(case=st.one_of(*(operation.as_strategy(mode) for mode in MODES)))
        def check(case: Any) -> None:
            case.call_and_validate(base_url=server, headers=owner, checks=CHECKS, timeout=20)

        started = time.monotonic()
        try:
            check()
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{operation.label}: {exc}")
        took[operation.label] = time.monotonic() - started
    slowest = sorted(took.items(), key=lambda item: -item[1])[:5]
    print(f"{len(took)} operations in {sum(took.values()):.1f}s; slowest {slowest}")
    assert len(took) > 40
    assert not failures, "\n\n".join(failures)
