"""The system prompt's list of available skills: names and one-line descriptions.

Bodies stay out of the prompt until a skill is activated. The list keeps within the live
setting ``skills_prompt_chars``; skills past the budget are counted, with the way to list
them, rather than cut mid-line.
"""

from __future__ import annotations

from corral.runtime.prompt.envelopes import attribute
from corral.runtime.prompt.system import PromptView
from corral.runtime.skills.activation import Skills
from corral.runtime.skills.catalog import SkillSet

__all__ = ["SkillsBlock", "render_skills"]

_DESCRIPTION_MAX = 200
_HEAD = (
    "<skills>\nSkill bundles you can activate with execute "
    '{"action": "skill", "skill": NAME}; activation returns its instructions.'
)
_TAIL = "</skills>"


def render_skills(skills: dict[str, str], budget: int) -> str | None:
    """The block for ``skills`` (name → description) within ``budget`` characters."""
    if not skills:
        return None
    lines: list[str] = []
    used = len(_HEAD) + len(_TAIL) + 2
    names = sorted(skills)
    for index, name in enumerate(names):
        text = " ".join(skills[name].split())
        if len(text) > _DESCRIPTION_MAX:
            text = text[: _DESCRIPTION_MAX - 1] + "…"
        line = f"- {name}: {text}"
        rest = len(names) - index
        # Leave room for the line that counts what did not fit.
        reserve = 0 if rest == 1 else 90
        if used + len(line) + 1 + reserve > budget:
            lines.append(
                f"- …and {rest} more skill{'s' if rest != 1 else ''} past the prompt budget; "
                "activate one by name"
            )
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join([_HEAD, *lines, _TAIL])


class SkillsBlock:
    """A :class:`~corral.runtime.prompt.system.StateBlock` listing the available skills."""

    name = "skills"

    def __init__(self, skills: Skills) -> None:
        self._skills = skills
        self._last: tuple[SkillSet, int, list[tuple[str, str]], str | None] | None = None
        """The last block, the set and budget it was rendered from, and what it shows of the
        set: every step of a run asks again."""

    async def render(self, view: PromptView) -> str | None:
        found = await self._skills.available(viewer=view.caller.user_id)
        budget = int(view.live.get("skills_prompt_chars", 4_000))
        last = self._last
        # The catalog hands back the very same set while nothing changed; a set made anew
        # (a viewer's trusted drive skills) is compared by what the block shows of it.
        if last is not None and last[0] is found and last[1] == budget:
            return last[3]
        shown = [(n, b.description) for n, b in found.skills.items()]
        if last is not None and last[1] == budget and last[2] == shown:
            self._last = (found, budget, shown, last[3])
            return last[3]
        text = render_skills({n: attribute(d) for n, d in shown}, budget)
        self._last = (found, budget, shown, text)
        return text
