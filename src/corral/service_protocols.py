"""Protocols of the services that cross layers: lower layers call them, higher ones provide.

Shell execution and web search sit below the runtime; they report, meter model use and read
stored credentials through these Protocols only, never by importing the runtime. The
runtime (and later the connect issue's credential store) provide the implementations; a
handler receives them on ``ctx.services`` (:class:`corral.tools.services.Services`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "ConversationModel",
    "CredentialLookup",
    "ReportSink",
    "UsageRecord",
    "UsageRecorder",
]


class ReportSink(Protocol):
    """Where background work (shells, delegate runs) reports when it ends.

    The runtime stores the report as a ``background_report`` row in the conversation and
    continues the conversation as ``user_id`` once no turn is in flight and no approval is
    open. Reports are durable: queued, never dropped.
    """

    async def queue_report(
        self,
        *,
        conversation_id: str,
        user_id: str,
        source: str,
        source_id: str,
        title: str,
        text: str,
        data: dict[str, Any],
    ) -> None: ...


class ConversationModel(Protocol):
    """The model the calling conversation runs on, as the runtime resolved it.

    Tools that use the conversation's own model (web_search's native strategy, research
    query variants) run on exactly this model and never switch vendors.
    """

    @property
    def spec(self) -> str:
        """The ``provider:model`` string, e.g. ``anthropic:claude-sonnet-5-5``."""
        ...

    @property
    def model(self) -> Model:
        """The pydantic-ai model instance to send requests to."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRecord:
    """Model use a tool made on the conversation's behalf, to count against its limits."""

    source: str
    """What spent it, e.g. ``web_search.native`` or ``web_search.variants``."""
    model: str
    """The ``provider:model`` string the requests went to."""
    user_id: str
    conversation_id: str | None
    run_id: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 1
    fee_usd: float = 0.0
    """Per-use fees billed on top of tokens (e.g. the vendor's per-search fee)."""
    details: Mapping[str, int] = field(default_factory=dict)
    """Counts behind the fee, e.g. ``{"web_searches": 2}``."""


class UsageRecorder(Protocol):
    """Where tools record model use so it counts towards usage and spend limits.

    The runtime provides it; a tool that would spend model tokens without a recorder must
    not run that step.
    """

    async def record(self, usage: UsageRecord) -> None: ...


class CredentialLookup(Protocol):
    """Stored credentials (API keys, instance URLs) by name, as the caller may use them.

    Returns ``None`` when nothing is stored under ``name`` for ``user_id``. Values never
    come from tool arguments and never appear in results.
    """

    async def lookup(self, name: str, *, user_id: str) -> str | None: ...
