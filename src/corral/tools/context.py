"""What a handler receives besides its arguments: the CallContext."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from corral.policy.identity import Caller
from corral.policy.profiles import Profile
from corral.policy.sources import SourcePolicy
from corral.settings import Settings
from corral.tools.cancellation import Cancellation
from corral.tools.findings import Findings
from corral.tools.narrowing import Narrowing
from corral.tools.services import Services

__all__ = ["CallContext", "Cancellation", "Narrowing", "OutputSink"]

OutputSink = Callable[[str, str], None]
"""Live output: ``sink(stream, text)``, e.g. ``("stdout", "building…")``."""


def _ignore_output(stream: str, text: str) -> None:
    return None


@dataclass(slots=True, kw_only=True)
class CallContext:
    """Everything a handler may use; it never reaches into the server."""

    tool: str
    call_id: str
    caller: Caller
    agent: str
    profile: Profile
    run_id: str | None
    conversation_id: str | None
    narrowing: Narrowing
    live: Mapping[str, Any]
    settings: Settings
    sources: SourcePolicy
    cancellation: Cancellation
    output: OutputSink = _ignore_output
    notes: list[str] = field(default_factory=list)
    services: Services = field(default_factory=Services)
    """What packages and the runtime provide (shells, web, questions, the run's model…)."""
    findings: Findings = field(default_factory=Findings)
    """What earlier steps of this call found (the policy hook's checked values), by type."""
