"""Stage ``visibility``: the tool exists and every narrowing layer admits it for this
caller and run (package state ∩ feature grants ∩ agent selection ∩ run narrowing ∩ context
rules); otherwise the call is refused, whatever the model claims."""

from __future__ import annotations

from corral.errors import FeatureMissing, NotVisible
from corral.tools.call import CallRequest, DispatchState, ToolCall
from corral.tools.narrowing import Narrowing
from corral.tools.registry import LoadedTool, Registry
from corral.tools.results import ToolResult
from corral.tools.selection import (
    AgentSelection,
    ContextRules,
    FeatureGrants,
    Layer,
    PackageState,
    RunNarrowing,
    Visibility,
)
from corral.tools.stages import Next

__all__ = ["VisibilityCheck"]

_SUBAGENT_RULES = ContextRules(subagent=True)
_TOP_LEVEL_RULES = ContextRules(subagent=False)


class VisibilityCheck:
    name = "visibility"

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        # The layers that depend only on the config snapshot, per agent; rebuilt when the
        # snapshot object changes (the config cache hands out a new one on every change).
        self._snapshot_layers: tuple[DispatchState | None, dict[str, tuple[Layer, Layer]]] = (
            None,
            {},
        )
        # A role's grants layer, kept while the snapshot's Grants object for it stays.
        self._grants_by_role: dict[str, FeatureGrants] = {}
        self._last_narrowing: tuple[Narrowing | None, RunNarrowing] = (
            None,
            RunNarrowing(Narrowing()),
        )

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        self.enter(call)
        return await next(call)

    def enter(self, call: ToolCall) -> None:
        call.tool = self.visible_tool(call.request, call.state)

    def visible_tool(self, request: CallRequest, state: DispatchState) -> LoadedTool:
        tool = self._registry.tools.get(request.tool)
        if tool is None:
            raise NotVisible(
                f"no tool named {request.tool!r} is available; call one of the tools listed "
                "in your tool list",
                data={"tool": request.tool},
            )
        for layer in self.layers(request, state):
            reason = layer.refusal(tool)
            if reason is None:
                continue
            error = FeatureMissing if isinstance(layer, FeatureGrants) else NotVisible
            raise error(
                f"tool {request.tool!r} is not available here: {reason}; "
                "use a tool from your tool list instead",
                data={"tool": request.tool, "reason": reason},
            )
        return tool

    def visibility(self, request: CallRequest, state: DispatchState) -> Visibility:
        return Visibility(self.layers(request, state))

    def layers(self, request: CallRequest, state: DispatchState) -> tuple[Layer, ...]:
        caller = request.caller
        package_state, selection = self._layers_of_snapshot(state, request.agent)
        grants = self._grants_by_role.get(caller.role)
        if grants is None or grants.grants is not caller.grants:
            grants = self._grants_by_role[caller.role] = FeatureGrants(caller.grants, caller.role)
        narrowing = request.narrowing
        # A run's calls share its Narrowing: keep the layer of the last one seen.
        last, run_layer = self._last_narrowing
        if last is not narrowing:
            run_layer = RunNarrowing(narrowing)
            self._last_narrowing = (narrowing, run_layer)
        return (
            package_state,
            grants,
            selection,
            run_layer,
            _SUBAGENT_RULES if narrowing.subagent else _TOP_LEVEL_RULES,
        )

    def _layers_of_snapshot(self, state: DispatchState, agent: str) -> tuple[Layer, Layer]:
        cached_state, by_agent = self._snapshot_layers
        if cached_state is not state:
            by_agent = {}
            self._snapshot_layers = (state, by_agent)
            self._grants_by_role = {}
        layers = by_agent.get(agent)
        if layers is None:
            selection = state.agents.get(agent) or AgentSelection(agent=agent, mode="all")
            layers = (PackageState(state.disabled_packages), selection)
            by_agent[agent] = layers
        return layers
