"""tool_search's service: the prompt's tool plan each step, and the search a call runs.

A search looks only at the tools the call's caller sees for this run (the dispatch
pipeline's visible set, narrowing included), so a tool out of sight is never found. What a
call finds is named in its result's data (``loaded``); the plan reads those results from
the conversation's timeline, so a run resumed anywhere, or a later run of the
conversation, keeps them loaded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from corral.runtime.prompt.system import PromptView
from corral.runtime.timeline import TimelineRow
from corral.runtime.tool_search.context_windows import context_window
from corral.runtime.tool_search.deferral import (
    TOOL_SEARCH,
    DeferralRequest,
    SchemaTokens,
    ToolPlan,
    listing,
    plan_tools,
)
from corral.runtime.tool_search.matching import SearchMode, parameter_names, search
from corral.tools.call import CallRequest
from corral.tools.registry import LoadedTool, same_tools
from corral.tools.results import TextBlock, ToolResult
from corral.tools.services import DelegateScope

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["ToolSearch", "loaded_by"]

DESCRIPTION_CHARS = 300
"""Characters of a found tool's description shown in the result."""


def loaded_by(row: TimelineRow) -> list[str]:
    """The tools a tool_search result row loaded (none for any other row)."""
    if row.kind != "tool_result" or row.data.get("tool") != TOOL_SEARCH:
        return []
    result = row.data.get("result")
    data = result.get("data") if isinstance(result, Mapping) else None
    names = data.get("loaded") if isinstance(data, Mapping) else None
    return [str(n) for n in names] if isinstance(names, list) else []


class _Loaded:
    """The tools each conversation's tool_search calls loaded, read incrementally."""

    def __init__(self, capacity: int = 256) -> None:
        self._seen: OrderedDict[str, tuple[int, frozenset[str]]] = OrderedDict()
        self._capacity = capacity

    def names(self, conversation_id: str, rows: Sequence[TimelineRow]) -> frozenset[str]:
        last = rows[-1].seq if rows else 0
        seen = self._seen.get(conversation_id)
        if seen is None or seen[0] > last:  # new here, or the history was read anew
            seen = (0, frozenset())
        upto, names = seen
        if last > upto:
            fresh: list[str] = []
            for row in reversed(rows):
                if row.seq <= upto:
                    break
                fresh += loaded_by(row)
            names = names | frozenset(fresh)
        self._seen[conversation_id] = (last, names)
        self._seen.move_to_end(conversation_id)
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return names


class ToolSearch:
    def __init__(self, runtime: RunHost) -> None:
        self._rt = runtime
        self._tokens = SchemaTokens()
        self._loaded = _Loaded()
        self._last: tuple[tuple[object, ...], tuple[LoadedTool, ...], ToolPlan, str | None] | None
        self._last = None
        """The last plan, its listing and what it was made from: every step asks again."""

    # -- the prompt's side ----------------------------------------------------------------

    async def plan(
        self, tools: Sequence[LoadedTool], view: PromptView, pinned: Sequence[str]
    ) -> tuple[Sequence[LoadedTool], str | None]:
        """The tools the model gets in full this step, and the list of deferred ones."""
        packages = self._rt.kernel.registry.packages
        pins = frozenset(pinned)
        # Equal settings, pins, package origins and loaded names, and the very same tools
        # (a replaced tool is another object): the plan is the one made last time.
        key = (
            str(view.live.get("tool_search", "auto")),
            float(view.live.get("tool_search_share_percent", 10.0)),
            view.run.model,
            pins,
            self._loaded.names(view.conversation_id, view.rows),
            tuple((name, package.origin) for name, package in packages.items()),
        )
        kept = self._last
        if kept is not None and kept[0] == key and same_tools(kept[1], tools):
            return kept[2].shown, kept[3]
        planned = await self.plan_for(tools, view, pinned)
        deferred = listing(planned.deferred)
        self._last = (key, tuple(tools), planned, deferred)
        return planned.shown, deferred

    async def plan_for(
        self, tools: Sequence[LoadedTool], view: PromptView, pinned: Sequence[str]
    ) -> ToolPlan:
        packages = self._rt.kernel.registry.packages
        pins = frozenset(pinned)

        def core(tool: LoadedTool) -> bool:
            package = packages.get(tool.package)
            return tool.name in pins or (package is not None and package.origin == "entry_point")

        mode = str(view.live.get("tool_search", "auto"))
        if mode == "auto":
            await self._tokens.count_new(t.spec for t in tools)
        request = DeferralRequest(
            mode=mode,
            share_percent=float(view.live.get("tool_search_share_percent", 10.0)),
            context_tokens=context_window(view.run.model),
            core=core,
            loaded=self._loaded.names(view.conversation_id, view.rows),
        )
        return plan_tools(tools, request, self._tokens)

    # -- the tool's side ------------------------------------------------------------------

    async def search(self, args: Mapping[str, Any], ctx: DelegateScope) -> ToolResult:
        """One tool_search call: the best matches among the tools this caller sees."""
        kernel = self._rt.kernel
        request = CallRequest(
            tool=TOOL_SEARCH,
            arguments={},
            caller=ctx.caller,
            agent=ctx.agent,
            narrowing=ctx.narrowing,
        )
        visible = kernel.dispatcher.visible_tools(request, await kernel.config.dispatch_state())
        specs = [t.spec for t in visible if t.name != TOOL_SEARCH]
        query = str(args["query"])
        mode = cast(SearchMode, args.get("mode", "bm25"))
        matches = search(specs, query, mode=mode, limit=int(args.get("limit", 5)))
        names = [m.spec.name for m in matches]
        if not matches:
            text = (
                f"No tool you can use matches {query!r} ({mode}). Try other words, a looser "
                "pattern, or the other mode; <deferred_tools> in your system prompt names "
                "every tool you can load."
            )
        else:
            lines = []
            for match in matches:
                spec = match.spec
                params = ", ".join(parameter_names(spec.input_schema))
                about = " ".join(spec.description.split())
                if len(about) > DESCRIPTION_CHARS:
                    about = about[: DESCRIPTION_CHARS - 1] + "…"
                lines.append(f"- {spec.name}({params}): {about}")
            text = (
                f"Found {len(matches)} tool{'s' if len(matches) != 1 else ''}, loaded with "
                "their full definitions from your next step; call them then:\n" + "\n".join(lines)
            )
        return ToolResult(
            content=[TextBlock(text)],
            data={"loaded": names, "query": query, "mode": mode},
        )
