"""Placing contributed stages among the built-in ones, and composing the chain."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from corral import ToolResult
from corral.tools.call import ToolCall
from corral.tools.stages import Next, Stage, StageContribution, StageError, compose, place


class Named:
    def __init__(self, name: str, trail: list[str] | None = None) -> None:
        self.name = name
        self.trail = trail if trail is not None else []

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        self.trail.append(f"in {self.name}")
        result = await next(call)
        self.trail.append(f"out {self.name}")
        return result


class Entering:
    def __init__(self, name: str, trail: list[str]) -> None:
        self.name = name
        self.trail = trail

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        self.enter(call)
        return await next(call)

    def enter(self, call: ToolCall) -> None:
        self.trail.append(f"enter {self.name}")


class Answer:
    name = "answer"

    async def __call__(self, call: ToolCall, next: Next) -> ToolResult:
        return ToolResult.text_result("answered")


BUILT = [Named("a"), Named("b"), Named("c")]


def names(stages: tuple[Stage, ...]) -> list[str]:
    return [stage.name for stage in stages]


def test_contributions_keep_install_order_at_one_position() -> None:
    placed = place(
        BUILT,
        [
            StageContribution(Named("x1"), after="a"),
            StageContribution(Named("y1"), before="c"),
            StageContribution(Named("x2"), after="a"),
            StageContribution(Named("y2"), before="c"),
            StageContribution(Named("z"), after="c"),
        ],
    )
    assert names(placed) == ["a", "x1", "x2", "b", "y1", "y2", "c", "z"]


def test_after_and_before_the_neighbouring_stages_meet_in_install_order() -> None:
    placed = place(
        BUILT,
        [
            StageContribution(Named("before_b"), before="b"),
            StageContribution(Named("after_a"), after="a"),
        ],
    )
    assert names(placed) == ["a", "after_a", "before_b", "b", "c"]


@pytest.mark.parametrize(
    ("contribution", "message"),
    [
        (StageContribution(Named("x"), after="nowhere"), "placed after 'nowhere', which is no"),
        (StageContribution(Named("x")), "needs exactly one position"),
        (StageContribution(Named("x"), before="a", after="b"), "needs exactly one position"),
        (StageContribution(Named("b"), after="a"), "stage 'b' is already in the pipeline"),
        (StageContribution(Named(""), after="a"), "has no name"),
        ("not a contribution", "must be StageContribution values, not str"),
    ],
)
def test_a_stage_that_cannot_be_placed_is_named(contribution: Any, message: str) -> None:
    with pytest.raises(StageError) as raised:
        place(BUILT, [contribution])
    assert message in str(raised.value)


def test_a_sync_stage_is_refused() -> None:
    class Sync:
        name = "sync"

        def __call__(self, call: ToolCall, next: Next) -> Any:
            return next(call)

    with pytest.raises(StageError, match="'sync' is not an async callable"):
        place(BUILT, [StageContribution(cast(Stage, Sync()), after="a")])


async def test_the_chain_runs_in_order_and_entry_stages_share_one_step() -> None:
    trail: list[str] = []
    chain = compose(
        [
            Named("outer", trail),
            Entering("e1", trail),
            Entering("e2", trail),
            Named("inner", trail),
            Answer(),
        ]
    )
    result = await chain(cast(ToolCall, None))
    assert result.text == "answered"
    assert trail == ["in outer", "enter e1", "enter e2", "in inner", "out inner", "out outer"]


async def test_a_chain_nobody_answers_says_so() -> None:
    call = cast(ToolCall, SimpleNamespace(request=SimpleNamespace(tool="lost")))
    result = await compose([Named("only")])(call)
    assert result.is_error and "no pipeline stage answered the call to 'lost'" in result.text
