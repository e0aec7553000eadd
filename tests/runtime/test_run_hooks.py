"""Hooks on a run: UserPromptSubmit refuses a message or adds context; Stop keeps a run going."""

from __future__ import annotations

import json

import pytest

from corral.errors import UsageError
from corral.platform import Platform
from tests.runtime.conftest import ScriptWriter, call
from tests.runtime.hooks.conftest import script


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
    with pytest.raises(UsageError):
        await rt_platform.chat("a new one: my password", model=model)
    # The conversation made for the refused message is not left behind empty.
    listed = await rt_platform.runtime.list_conversations()
    assert [c.id for c in listed] == [turn.conversation_id]


async def test_a_stop_hook_keeps_the_run_going_once(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    model = write_script(
        {"text": "Done."},
        [
            {"when_message_contains": "Run the tests before you finish", "text": "Tested; done."},
            {"text": "Ended without the hook."},
        ],
    )
    stop = {"Stop": [{"hooks": [{"type": "command", "command": script("stop_once.py")}]}]}
    await rt_platform.admin.set_live("hooks", stop)
    turn = await rt_platform.chat("fix the bug", model=model)
    assert turn.status == "finished" and turn.text == "Tested; done." and turn.steps == 2
    kept = [r for r in turn.rows if r.kind == "user_message" and r.data.get("hook") == "Stop"]
    assert len(kept) == 1
    assert "blocked by hook stop_once.py: Run the tests before you finish." in kept[0].data["text"]


async def test_session_and_subagent_start_hooks_add_context(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    child = write_script(
        [
            {"when_message_contains": "Subagents answer in French", "text": "Bonjour."},
            {"text": "Hello."},
        ],
        name="child",
    )
    parent = write_script(
        [
            {
                "when_message_contains": "Project uses pytest",
                "tool_calls": [call("delegate", task="Greet", model=child)],
            },
            {"text": "No session context."},
        ],
        [{"when_result_contains": "Bonjour.", "text": "The child spoke French."}, {"text": "?"}],
        {"text": "Second turn."},
    )

    def echo(text: str) -> list[dict[str, object]]:
        return [{"hooks": [{"type": "command", "command": f"echo '{text}'"}]}]

    french = {
        "hookSpecificOutput": {
            "hookEventName": "SubagentStart",
            "additionalContext": "Subagents answer in French",
        }
    }
    await rt_platform.admin.set_live(
        "hooks",  # plain text is context for SessionStart; SubagentStart answers in JSON
        {"SessionStart": echo("Project uses pytest"), "SubagentStart": echo(json.dumps(french))},
    )  # fmt: skip
    turn = await rt_platform.chat("go", model=parent, profile="auto")
    assert turn.text == "The child spoke French."
    again = await rt_platform.chat("again", model=parent, conversation_id=turn.conversation_id)
    assert again.rows[0].data["text"] == "again" and "hook_context" not in again.rows[0].data


async def test_a_pre_compact_hook_can_refuse_the_compaction(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    model = write_script(
        {"tool_calls": [call("echo", text="build log")]},
        {
            "tool_calls": [
                call(
                    "compact_history",
                    action="truncate",
                    targets=[{"sequence": 1}],
                    reason="raw build log",
                )
            ]
        },
        {"text": "Kept it."},
    )
    command = "grep -q '\"trigger\": \"auto\"' && echo 'audit needs the full log' >&2 && exit 2"
    await rt_platform.admin.set_live(
        "hooks", {"PreCompact": [{"matcher": "auto", "hooks": [{"type": "command",
                                                                "command": command}]}]}
    )  # fmt: skip
    turn = await rt_platform.chat("build", model=model, profile="auto")
    (result,) = [r for r in turn.rows if r.kind == "tool_result" and r.data["tool"] != "echo"]
    assert result.data["result"]["error_code"] == "hook_blocked", result.data
    assert "blocked by hook grep: audit needs the full log" in json.dumps(result.data)
