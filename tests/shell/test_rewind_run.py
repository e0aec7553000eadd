"""A scripted run changes a project through the shell (sed -i, rm -r, mv, chmod, ln -s, a
background shell that writes, a Python script writing many files) and fs_edit, under real
bubblewrap. Rewinding to the middle gives the middle back; rewinding to the start leaves
the tree byte-identical to a copy taken before. The conversation part hides the later rows
from the model's next request, and the timeline keeps them, shown as rewound."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from corral.errors import ConversationBusy
from corral.platform import Platform
from corral.runtime.rewinds import rewound_seqs
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap, shells
from tests.shell.test_checkpoints import Described, describe
from tests.shell.test_rewind import rewind

pytestmark = needs_bwrap

GEN = (
    "import os\n"
    "os.makedirs('gen/deep', exist_ok=True)\n"
    "for i in range(200):\n"
    "    open(f'gen/deep/f{i}.txt', 'w').write(str(i) * 40)\n"
)


BACKGROUND = "echo more >> moved.txt && mkdir bg && echo bg > bg/out.txt && chmod 700 bg"


async def background_ended(platform: Platform, conversation: str, call_id: str) -> None:
    """Wait until the background shell ``call_id`` started ended and its checkpoint is kept."""
    rows = await platform.rows(conversation)
    [started] = [r for r in rows if r.call_id == call_id and r.kind == "tool_result"]
    shell_id = (started.data or {})["result"]["data"]["shell_id"]
    service = shells(platform)
    record = await service.background.wait_ended(shell_id, 30)
    assert record.exit_code == 0, record
    await service.settle_checkpoints()


class Script:
    """A model answering each request with the next response, keeping what it was sent."""

    def __init__(self, platform: Platform, name: str) -> None:
        self.name = name
        self.responses: list[ModelResponse] = []
        self.seen: list[list[ModelMessage]] = []
        self.systems: list[str] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.seen.append(list(messages))
            self.systems.append(info.instructions or "")
            return self.responses.pop(0)

        platform.runtime.models.register(name, FunctionModel(respond, model_name=name))

    def call(self, call_id: str, tool: str, **args: Any) -> None:
        self.responses.append(ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)]))

    def say(self, text: str) -> None:
        self.responses.append(ModelResponse(parts=[TextPart(text)]))


def call_ids(messages: list[ModelMessage]) -> set[str]:
    """Every tool call id the history holds, made or answered."""
    found: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart | ToolReturnPart):
                found.add(part.tool_call_id)
    return found


def texts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        for part in message.parts
        if isinstance(part, TextPart) or type(part).__name__ == "UserPromptPart"
        if isinstance(part.content, str)
    ]


def project(drive: Path, uid: int) -> Described:
    root = drive / "proj"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / "x.txt").write_text("x\n")
    (root / "sub" / "y.bin").write_bytes(bytes(range(256)))
    (root / "a.txt").write_text("one\nline two\n")
    (root / "b.txt").write_text("bee\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    (root / "old-link").symlink_to("b.txt")
    (root / "gen.py").write_text(GEN)
    give_to_sandbox(drive, uid)
    return describe(root)


async def test_rewinding_a_scripted_run_to_the_middle_and_to_its_start(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    # No report of the background shell wakes the conversation: the script answers turns only.
    await platform.admin.set_live("shell_background_notify", False)
    start = project(drive, platform.kernel.settings.sandbox_uid)
    cwd = str(drive / "proj")
    model = Script(platform, "script:rewind")
    model.call("c1", "execute", command="sed -i s/one/two/ a.txt", cwd=cwd)
    model.call("c2", "execute", command="rm -r sub", cwd=cwd)
    model.call("c3", "execute", command="mv b.txt moved.txt", cwd=cwd)
    model.call("cb", "execute", command=BACKGROUND, cwd=cwd, background=True)
    model.say("Half done.")
    turn = await platform.chat("first half", model=model.name, profile="auto")
    assert turn.status == "finished" and turn.text == "Half done.", turn
    conversation = turn.conversation_id
    await background_ended(platform, conversation, "cb")
    middle = describe(drive / "proj")
    assert middle["bg/out.txt"][2] == b"bg\n" and middle["moved.txt"][2] == b"bee\nmore\n"

    model.call("c4", "execute", command="chmod 600 run.sh", cwd=cwd)
    model.call("c5", "execute", command="ln -s moved.txt link && ln -sfn a.txt old-link", cwd=cwd)
    model.call("c6", "execute", command="python3 gen.py && seq 1 2000", cwd=cwd)
    model.call("c7", "fs_edit", uri="data://proj/a.txt", old="two\nline", new="2\nline")
    model.say("All done.")
    turn = await platform.chat("second half", model=model.name, conversation_id=conversation)
    assert turn.status == "finished" and turn.text == "All done.", turn
    changed = describe(drive / "proj")
    assert changed["a.txt"][2] == b"2\nline two\n" and "gen/deep/f199.txt" in changed
    assert "tool_use_id c6" in model.systems[-1]  # its long output is on the context map
    steps = await platform.checkpoints(conversation)
    ids = ["c1", "c2", "c3", "cb", "c4", "c5", "c6", "c7"]
    assert [(s.step, s.call_id) for s in steps] == list(enumerate(ids, start=1)), steps

    preview = await platform.rewind_preview(conversation, "c4")
    assert describe(drive / "proj") == changed  # a preview changes nothing
    assert preview.files is not None and preview.conversation is not None
    assert {c.path for c in preview.files} >= {"proj/run.sh", "proj/link", "proj/gen"}
    assert {r.call_id for r in preview.conversation.rows if r.call_id} == {"c4", "c5", "c6", "c7"}

    done = await platform.rewind(conversation, "c4")
    assert not done.refused and [s.step for s in done.steps] == [5, 6, 7, 8]
    assert describe(drive / "proj") == middle
    assert done.conversation is not None and done.conversation.marker_seq is not None

    model.say("Back at the middle.")
    turn = await platform.chat("where are we?", model=model.name, conversation_id=conversation)
    assert turn.text == "Back at the middle."
    sent = model.seen[-1]
    assert call_ids(sent) == {"c1", "c2", "c3", "cb"}
    shown = texts(sent)
    assert "Half done." in shown and "All done." not in shown and "where are we?" in shown
    assert "second half" in shown  # the user's message came before the rewound turn
    # Nor is a rewound output on the context map (its handle, not just "c6": the session
    # header's random ids may hold those two characters).
    assert "tool_use_id c6" not in model.systems[-1]
    rows = await platform.rows(conversation)
    rewound = rewound_seqs(rows)
    later = [r for r in rows if r.call_id in {"c4", "c5", "c6", "c7"}]
    assert len(later) == 8 and all(r.seq in rewound for r in later)  # kept, shown as rewound
    assert not any(r.seq in rewound for r in rows if r.call_id in {"c1", "c2", "c3", "cb"})

    done = await platform.rewind(conversation, "1")
    assert not done.refused, done.conflicts  # the first rewind's own writes are no conflict
    assert [s.step for s in done.steps] == [1, 2, 3, 4]  # the background shell's among them
    assert describe(drive / "proj") == start  # contents, modes, links and owners
    model.say("From the start.")
    await platform.chat("again", model=model.name, conversation_id=conversation)
    assert call_ids(model.seen[-1]) == set()
    assert "where are we?" not in texts(model.seen[-1])


async def test_a_parked_run_refuses_the_rewind_and_says_what_to_do(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    project(drive, platform.kernel.settings.sandbox_uid)
    model = Script(platform, "script:park")
    model.call("c1", "execute", command="rm b.txt", cwd=str(drive / "proj"))
    model.call("c2", "ask_question", questions=[{"question": "Go on?", "options": ["yes", "no"]}])
    turn = await platform.chat("go", model=model.name, profile="auto")
    assert turn.status == "parked", turn
    preview = await platform.rewind_preview(turn.conversation_id, "c1")
    assert preview.blocked is not None and "parked" in preview.blocked
    with pytest.raises(ConversationBusy, match=r"parked.*corral runs stop"):
        await platform.rewind(turn.conversation_id, "c1")
    assert not (drive / "proj" / "b.txt").exists()


async def test_corral_rewind_previews_then_rewinds_files_and_conversation(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    start = project(drive, platform.kernel.settings.sandbox_uid)
    cwd = str(drive / "proj")
    model = Script(platform, "script:cli")
    model.call("c1", "execute", command="sed -i s/one/two/ a.txt && rm -r sub", cwd=cwd)
    model.call("c2", "execute", command="chmod 700 run.sh", cwd=cwd)
    model.say("Done.")
    turn = await platform.chat("go", model=model.name, profile="auto")
    conversation = turn.conversation_id
    changed = describe(drive / "proj")

    code, out, err = await rewind(platform, conversation, "--to", "c1", "--preview")
    assert code == 0, err
    assert "proj/a.txt: modify: content" in out and "-two\n+one" in out
    assert "proj/sub/y.bin: recreate (file): binary content" in out
    assert "proj/run.sh: modify: mode 0700 → 0755" in out
    assert "conversation: 7 row(s)" in out and "would be hidden" in out
    assert describe(drive / "proj") == changed
    for args, expected in [
        (("--to", "c1", "--files-only", "--conversation-only"), "exclude each other"),
        (("--to", "nope"), "no step, checkpoint or tool call 'nope'"),
        (("--preview",), "--to"),
    ]:
        code, out, err = await rewind(platform, conversation, *args)
        assert code == 2 and expected in err and "Traceback" not in err, (args, out, err)

    (drive / "proj" / "run.sh").chmod(0o711)  # a person changes it after the run
    code, out, err = await rewind(platform, conversation, "--to", "c2")
    assert code == 1 and "proj/run.sh: changed since" in err, out + err
    code, out, err = await rewind(platform, conversation, "--to", "c1", "--force", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert not done["refused"] and done["forced"] and done["conversation"]["marker_seq"]
    assert describe(drive / "proj") == start
    code, out, err = await rewind(platform, conversation, "--to", "c2", "--conversation-only")
    assert code == 0 and "hidden from the model" in out, err
    code, out, err = await rewind(platform, conversation, "--to", "c2", "--files-only")
    assert code == 0 and "nothing to put back" in out, out + err
