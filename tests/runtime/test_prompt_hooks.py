"""UserPromptSubmit hooks on a chat turn: a block refuses the message, added text reaches
the model with it."""

from __future__ import annotations

import pytest

from corral.errors import UsageError
from corral.platform import Platform
from tests.runtime.conftest import ScriptWriter


def prompt_hook(command: str) -> dict[str, object]:
    return {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}


async def test_a_prompt_hook_blocks_the_message_or_adds_context(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    model = write_script(
        [
            {"when_message_contains": "Sprint 12 ends Friday", "text": "Noted the sprint."},
            {"text": "No context arrived."},
        ]
    )
    await rt_platform.admin.set_live("hooks", prompt_hook("echo 'Sprint 12 ends Friday'"))
    turn = await rt_platform.chat("what is due?", model=model)
    assert turn.text == "Noted the sprint."
    assert turn.rows[0].data["text"] == "what is due?"  # the person's words stay theirs
    await rt_platform.admin.set_live(
        "hooks", prompt_hook("grep -q password && echo 'no secrets in chat' >&2 && exit 2; true")
    )
    before = await rt_platform.runtime.conversations.rows(turn.conversation_id)
    with pytest.raises(UsageError) as caught:
        await rt_platform.chat(
            "my password is hunter2", model=model, conversation_id=turn.conversation_id
        )
    assert str(caught.value) == "the message was not sent: blocked by hook grep: no secrets in chat"
    after = await rt_platform.runtime.conversations.rows(turn.conversation_id)
    assert len(after) == len(before)  # nothing of the refused message was stored
