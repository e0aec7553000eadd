"""The stage protocol: every step of the dispatch pipeline is a stage, and so is what a
package adds to it.

A stage is an object with a ``name`` and an async ``__call__(call, next)``, middleware
style. It acts on the way in, calls ``await next(call)`` for the stages after it and acts on
the result on the way out; or it answers itself without calling ``next`` (a refusal: raise a
:class:`~corral.errors.Refusal` or return an error result); or it replaces
``call.arguments`` for the stages after it::

    class Audit:
        name = "audit"

        async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
            result = await next(call)
            log.info("%s -> %s", call.tool.name, result.status)
            return result

A package contributes stages through its install hook, each at a declared position
relative to a built-in stage (:data:`BUILT_IN`)::

    return Installed(stages=[StageContribution(Audit(), after="approval")])

Positions are resolved once, when the package is installed (:func:`place`); the stage list
is composed once into a chain (:func:`compose`), so a call costs one await per stage. A stage
that only acts on the way in may also define ``enter(call)`` (sync, same effect as its
``__call__`` before ``next``): consecutive such stages then run in one step of the chain,
without an await each (the built-in visibility, validation, grants and context stages do).
A stage that often has nothing to do may define ``engaged()`` (sync, cheap): while it
answers False the stage is left out of the composed chain, and the dispatcher asks again
when the configuration snapshot changes, at least once every :data:`RECHECK_SECONDS` and
when told to (``Dispatcher.recheck_stages``); it recomposes when an answer changed (the
hooks stage is out while no hook is configured). Such a stage must still pass calls
through when it finds nothing to do, since it may stay in the chain up to that long.
Contributions at the same position keep install order: two stages ``before="handler"``
run in the order they were installed, both before the handler.

What a stage can rely on, by position: ``call.tool`` from after ``visibility``,
validated ``call.arguments`` from after ``validation``, ``call.context`` (the handler's
``CallContext``) from after ``context``. A stage after ``approval`` sees only calls that
will run (approved or not needing it). A stage after ``shaping`` (further in) has its
refusals turned into error results the model can read; one before it (further out) sees
shaped results, and a ``ToolError`` it raises is turned into a shaped error result by the
dispatcher itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeGuard

from corral.tools.call import ToolCall
from corral.tools.results import ToolResult

__all__ = [
    "BUILT_IN",
    "RECHECK_SECONDS",
    "EntryStage",
    "Next",
    "Stage",
    "StageContribution",
    "StageError",
    "SwitchedStage",
    "compose",
    "is_switched",
    "place",
]

Next = Callable[[ToolCall], Awaitable[ToolResult]]
"""The rest of the pipeline, as one stage sees it."""

BUILT_IN = (
    "slow_calls",
    "shaping",
    "visibility",
    "validation",
    "grants",
    "context",
    "policy",
    "approval",
    "handler",
)
"""The built-in stages by name, outermost first (the order ``Dispatcher`` lists them)."""


class Stage(Protocol):
    """One step of the pipeline."""

    @property
    def name(self) -> str:
        """Short and unique among the pipeline's stages, e.g. ``"approval"``."""
        ...

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        """Handle ``call``; ``await next(call)`` runs the stages after this one."""
        ...


RECHECK_SECONDS = 1.0
"""How often, at most, a switched stage's ``engaged()`` waits to be asked again."""


class SwitchedStage(Stage, Protocol):
    """A stage left out of the chain while it has nothing to do."""

    def engaged(self) -> bool:
        """Whether the stage has work now (asked rarely, never per call)."""
        ...


def is_switched(stage: Stage) -> TypeGuard[SwitchedStage]:
    return callable(getattr(stage, "engaged", None))


class EntryStage(Stage, Protocol):
    """A stage that acts only on the way in, offering the sync form as well."""

    def enter(self, call: ToolCall) -> None:
        """What ``__call__`` does before ``await next(call)``."""
        ...


@dataclass(frozen=True, slots=True)
class StageContribution:
    """A package's stage and where it goes: exactly one of ``before`` / ``after``, naming a
    built-in stage (:data:`BUILT_IN`)."""

    stage: Stage
    before: str | None = None
    after: str | None = None

    @property
    def anchor(self) -> str:
        return self.before if self.before is not None else str(self.after)


class StageError(ValueError):
    """A contributed stage cannot be placed (unknown anchor, bad stage, name taken)."""


def _check(contribution: object, anchors: Sequence[str], taken: set[str]) -> StageContribution:
    if not isinstance(contribution, StageContribution):
        raise StageError(
            f"stages must be StageContribution values, not {type(contribution).__name__}"
        )
    stage = contribution.stage
    name = getattr(stage, "name", None)
    if not isinstance(name, str) or not name:
        raise StageError(
            f"the stage {type(stage).__name__} has no name; give it a `name` string attribute"
        )
    if not (callable(stage) and inspect.iscoroutinefunction(type(stage).__call__)):
        raise StageError(
            f"stage {name!r} is not an async callable; define "
            "`async def __call__(self, call, next)` on it"
        )
    if name in taken:
        raise StageError(f"stage {name!r} is already in the pipeline; give it another name")
    if (contribution.before is None) == (contribution.after is None):
        raise StageError(
            f"stage {name!r} needs exactly one position: before=<stage> or after=<stage>"
        )
    if contribution.anchor not in anchors:
        side = "before" if contribution.before is not None else "after"
        raise StageError(
            f"stage {name!r} is placed {side} {contribution.anchor!r}, which is no built-in "
            f"stage; use one of {', '.join(anchors)}"
        )
    return contribution


def place(
    built_in: Sequence[Stage], contributions: Sequence[StageContribution]
) -> tuple[Stage, ...]:
    """The ``built_in`` stages with every contribution at its position, in order; a
    :class:`StageError` names the first one that cannot be placed."""
    anchors = [stage.name for stage in built_in]
    placed = list(built_in)
    taken = set(anchors)
    placed_after: dict[str, str] = {}
    for contribution in contributions:
        checked = _check(contribution, anchors, taken)
        name = checked.stage.name
        taken.add(name)
        index = next(i for i, s in enumerate(placed) if s.name == checked.anchor)
        if checked.after is not None:
            # After the anchor and after the stages placed after it earlier.
            index += 1
            while index < len(placed) and placed_after.get(placed[index].name) == checked.after:
                index += 1
            placed_after[name] = checked.after
        placed.insert(index, checked.stage)
    return tuple(placed)


async def _end(call: ToolCall) -> ToolResult:
    return ToolResult.text_result(
        f"no pipeline stage answered the call to {call.request.tool!r}",
        is_error=True,
        error_code="pipeline_order",
    )


class _Entering:
    """Consecutive entry stages, then the rest of the chain: one await for all of them."""

    __slots__ = ("_enters", "_rest")

    def __init__(self, enters: Sequence[Callable[[ToolCall], None]], rest: Next) -> None:
        self._enters = tuple(enters)
        self._rest = rest

    async def __call__(self, call: ToolCall) -> ToolResult:
        for enter in self._enters:
            enter(call)
        return await self._rest(call)


def compose(stages: Sequence[Stage]) -> Next:
    """One callable that runs ``stages`` in order, built once (no closures per call)."""
    chain: Next = _end
    entering: list[Callable[[ToolCall], None]] = []
    for stage in reversed(stages):
        enter = getattr(stage, "enter", None)
        if callable(enter):
            entering.insert(0, enter)
            continue
        if entering:
            chain, entering = _Entering(entering, chain), []
        chain = partial(stage.__call__, next=chain)
    return _Entering(entering, chain) if entering else chain
