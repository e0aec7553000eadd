"""Stage ``grants``: the caller's role holds the tool's features, and the features of each
argument it sets (an argument gated ``refuse`` refuses the call; one gated ``drop`` is taken
out with a note appended to the result)."""

from __future__ import annotations

import copy
from typing import Any

from corral.errors import FeatureMissing
from corral.policy.identity import Caller
from corral.tools.call import ToolCall
from corral.tools.json_pointers import delete_pointer, has_pointer, pointer_parts
from corral.tools.registry import LoadedTool
from corral.tools.results import ToolResult
from corral.tools.stages import Next

__all__ = ["FeatureGates"]


class FeatureGates:
    name = "grants"

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        self.enter(call)
        return await next(call)

    def enter(self, call: ToolCall) -> None:
        call.arguments = self.apply(call.tool, call.arguments, call.request.caller, call.notes)

    def apply(
        self, tool: LoadedTool, arguments: dict[str, Any], caller: Caller, notes: list[str]
    ) -> dict[str, Any]:
        """``arguments`` with dropped ones taken out (a copy then); notes go to ``notes``."""
        missing = caller.grants.missing(tool.spec.features)
        if missing:
            raise FeatureMissing(
                f"tool {tool.name!r} needs feature {', '.join(map(repr, missing))}, which "
                f"role {caller.role!r} lacks; ask an administrator for it",
                data={"features": missing},
            )
        copied = False
        for gate in tool.spec.argument_features:
            parts = pointer_parts(gate.pointer)
            if not has_pointer(arguments, parts):
                continue
            lacking = caller.grants.missing(gate.features)
            if not lacking:
                continue
            name = gate.pointer.lstrip("/")
            needed = ", ".join(map(repr, lacking))
            if gate.when_missing == "refuse":
                raise FeatureMissing(
                    f"argument {name!r} of {tool.name!r} needs feature {needed}, which role "
                    f"{caller.role!r} lacks; call again without {name!r} or ask an "
                    "administrator for the feature",
                    data={"pointer": gate.pointer, "features": lacking},
                )
            if not copied:
                arguments = copy.deepcopy(arguments)
                copied = True
            delete_pointer(arguments, parts)
            notes.append(
                gate.note
                or f"argument {name!r} was ignored: it needs feature {needed}, which role "
                f"{caller.role!r} lacks"
            )
        return arguments
