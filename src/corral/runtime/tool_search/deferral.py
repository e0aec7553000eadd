"""Which visible tools the model gets in full this step, and which it finds by tool_search.

When the schemas of the visible tools take more than the live share
(``tool_search_share_percent``) of the model's context (or ``tool_search`` is "on"), the
tools beyond the core set are *deferred*: the model sees their names, one line each, in the
system prompt, and ``tool_search`` to load them. The core set is the native tools (those of
the installed Python packages), those the agent pins, and those a ``tool_search`` call of
the conversation loaded. Deferring only hides definitions: a deferred tool stays visible
and a call of it passes the same pipeline as any other.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from corral.runtime.compaction.tokens import count_tokens
from corral.tools.contract import ToolSpec
from corral.tools.registry import LoadedTool

__all__ = ["TOOL_SEARCH", "DeferralRequest", "SchemaTokens", "ToolPlan", "listing", "plan_tools"]

TOOL_SEARCH = "tool_search"


class SchemaTokens:
    """Tokens of each tool's definition as the model receives it, counted once per spec."""

    def __init__(self) -> None:
        self._counted: dict[str, tuple[ToolSpec, int]] = {}

    def __call__(self, spec: ToolSpec) -> int:
        cached = self._counted.get(spec.name)
        if cached is None or cached[0] is not spec:
            text = json.dumps(spec.model_schema(), ensure_ascii=False, separators=(",", ":"))
            cached = self._counted[spec.name] = (spec, count_tokens(text))
        return cached[1]

    async def count_new(self, specs: Iterable[ToolSpec]) -> None:
        """Count the specs not counted yet in a thread: the tokenizer loads on first use
        and a long list takes a while, which the event loop must not wait for."""
        new = [s for s in specs if self._counted.get(s.name, (None,))[0] is not s]
        if new:
            await asyncio.to_thread(lambda: [self(s) for s in new])


@dataclass(frozen=True, slots=True, kw_only=True)
class DeferralRequest:
    mode: str
    """``auto`` (defer above the share), ``on`` (always defer) or ``off``."""
    share_percent: float
    context_tokens: int
    core: Callable[[LoadedTool], bool]
    """Whether a tool is native or pinned: never deferred."""
    loaded: Collection[str]
    """Tools a tool_search call loaded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPlan:
    shown: tuple[LoadedTool, ...]
    deferred: tuple[LoadedTool, ...]
    schema_tokens: int | None
    """Tokens of every visible tool's definition (what the model would get without
    deferral); counted only in ``auto`` mode, which decides by them."""
    threshold: int
    """Above this many schema tokens ``auto`` defers."""


def plan_tools(
    tools: Sequence[LoadedTool], request: DeferralRequest, tokens: Callable[[ToolSpec], int]
) -> ToolPlan:
    """Split the visible ``tools`` into those shown in full and those deferred."""
    others = [t for t in tools if t.name != TOOL_SEARCH]
    searchable = len(others) < len(tools)  # tool_search itself is visible to this caller
    threshold = int(request.context_tokens * request.share_percent / 100)
    total = None
    if searchable and request.mode == "auto":
        total = sum(tokens(t.spec) for t in others)
    defer = searchable and (request.mode == "on" or (total is not None and total > threshold))
    deferred = (
        tuple(t for t in others if not request.core(t) and t.name not in request.loaded)
        if defer
        else ()
    )
    if not deferred:
        return ToolPlan(shown=tuple(others), deferred=(), schema_tokens=total, threshold=threshold)
    hidden = {t.name for t in deferred}
    return ToolPlan(
        shown=tuple(t for t in tools if t.name not in hidden),
        deferred=deferred,
        schema_tokens=total,
        threshold=threshold,
    )


def listing(deferred: Sequence[LoadedTool]) -> str | None:
    """The system prompt's list of deferred tools, one name a line."""
    if not deferred:
        return None
    names = "\n".join(t.name for t in deferred)
    return (
        f"<deferred_tools>\nThese {len(deferred)} tools are available but not loaded. To use "
        f"one, find it with {TOOL_SEARCH} (by name pattern or by words); the tools it finds "
        f"are loaded from your next step.\n{names}\n</deferred_tools>"
    )
