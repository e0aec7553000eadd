"""The skills block of a real run's prompt follows the folders from one step to the next,
while the catalog keeps a settled folder's listing between steps."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import corral
from corral.runtime.skills import Skills
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


async def test_the_skills_block_follows_an_edit_and_the_budget_from_step_to_step(
    tmp_path: Path,
) -> None:
    # The block is kept between steps while the skills and the budget are as they were.
    folder = tmp_path / "operator-skills"
    skill = write_bundle(folder, "kept-skill", description="First words.") / "SKILL.md"
    age(skill, write_bundle(folder, "other-skill") / "SKILL.md")
    age(folder)
    seen: list[str] = []

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        if len(seen) == 1:
            skill.write_text(skill.read_text().replace("First words.", "Second words."))
        elif len(seen) == 3:
            await platform.admin.set_live("skills_prompt_chars", 200)
        if len(seen) < 5:
            call = ToolCallPart("no_such_tool", {}, tool_call_id=f"c{len(seen)}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    async with corral.open(tmp_path / "data", skill_paths=[folder]) as platform:
        platform.runtime.models.register("test:skills", FunctionModel(model))
        turn = await platform.chat("go", model="test:skills")
    assert turn.status == "finished" and len(seen) == 5
    assert "- kept-skill: First words." in seen[0]
    assert all("- kept-skill: Second words." in s for s in seen[1:3])
    assert all("kept-skill" not in s and "past the prompt budget" in s for s in seen[3:])


async def test_without_drive_skills_every_viewer_gets_the_catalogs_kept_set(
    tmp_path: Path,
) -> None:
    # Only a drive skill needs the viewer's trust checked; with none, the set the catalog
    # keeps is handed over as it is, so the skills block can tell nothing changed.
    folder = tmp_path / "operator-skills"
    age(write_bundle(folder, "first-skill") / "SKILL.md")
    age(folder)
    async with corral.open(tmp_path / "data", skill_paths=[folder]) as platform:
        skills = platform.services.require(Skills)
        kept = await skills.available(viewer=None)
        assert await skills.available(viewer="someone") is kept
        assert await skills.available(viewer="another") is kept
        assert "first-skill" in kept.skills
