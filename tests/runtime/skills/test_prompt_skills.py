"""The skills block of a real run's prompt follows the folders from one step to the next,
while the catalog keeps a settled folder's listing between steps."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import corral
from tests.runtime.skills.conftest import write_bundle
from tests.runtime.skills.test_catalog import age


async def test_a_skill_added_between_two_steps_is_in_the_next_prompt(tmp_path: Path) -> None:
    folder = tmp_path / "operator-skills"
    age(write_bundle(folder, "first-skill") / "SKILL.md")
    age(folder)  # settled: its listing is kept from step to step
    seen: list[str] = []

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        if len(seen) == 1:
            write_bundle(folder, "added-skill", description="Arrived mid-run.")
            return ModelResponse(parts=[ToolCallPart("no_such_tool", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    async with corral.open(tmp_path / "data", skill_paths=[folder]) as platform:
        platform.runtime.models.register("test:skills", FunctionModel(model))
        turn = await platform.chat("go", model="test:skills")
    assert turn.status == "finished" and len(seen) == 2
    assert "- first-skill: Publish notes." in seen[0] and "added-skill" not in seen[0]
    assert "- added-skill: Arrived mid-run." in seen[1]
