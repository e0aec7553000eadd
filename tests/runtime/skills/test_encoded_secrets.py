"""A skill's credential printed encoded by a real sandboxed command reaches nobody.

The attack scripts: a command in the sandbox holds a declared credential in its
environment and prints it through ``base64`` (wrapped, URL-safe, at a byte offset), ``xxd``,
``od``, ``rev``, ``tr`` (rot13) and ``fold``. Whatever the encoding, the value must not show
in the result, the live frames, the rows, or any file the platform keeps.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import corral
from corral.connect import CredentialStore
from corral.platform import Platform
from corral.secret_forms import derived_forms
from tests.conftest import DEMO
from tests.runtime.conftest import call
from tests.runtime.skills.conftest import write_bundle
from tests.runtime.skills.test_activation import files_holding, results, script, text
from tests.sandbox_owner import passable_folder
from tests.shell.conftest import needs_bwrap

pytestmark = [pytest.mark.asyncio(loop_scope="module"), needs_bwrap]

# Letters that give base64 a "+" and a "/" (so the URL-safe alphabet differs) and hex both cases.
SECRET = "wk-Ab?>~Zz" + "s3cr3tV4lue" * 2

ATTACKS = {
    "base64": 'printf %s "$WIKI_TOKEN" | base64',
    "base64 -w 20": 'printf %s "$WIKI_TOKEN" | base64 -w 20',
    "base64 at a byte offset": 'printf "xy%s" "$WIKI_TOKEN" | base64 -w 0',
    "base64url": 'printf %s "$WIKI_TOKEN" | basenc --base64url',
    "xxd -p": 'printf %s "$WIKI_TOKEN" | xxd -p',
    "od, spaces removed": "printf %s \"$WIKI_TOKEN\" | od -An -tx1 -v | tr -d ' \\n'",
    "rev": 'printf %s "$WIKI_TOKEN" | rev',
    "rot13": 'printf %s "$WIKI_TOKEN" | tr A-Za-z N-ZA-Mn-za-m',
    "fold -w 5": 'printf %s "$WIKI_TOKEN" | fold -w 5',
}

FORMS = {SECRET, *derived_forms(SECRET)}


def holds_a_form(shown: str) -> list[str]:
    flat = shown.replace("\\r", "").replace("\\n", "").replace("\r", "").replace("\n", "")
    return [form for form in FORMS if form in flat or json.dumps(form)[1:-1] in flat]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def platform(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Platform]:
    with passable_folder(tmp_path_factory.mktemp("encoded"), "encoded") as root:
        demo = Path(shutil.copytree(DEMO, root / "demo"))
        wiki = "credentials:\n  - name: wiki\n    env: WIKI_TOKEN\n"
        write_bundle(demo / "skills", "wiki-notes", credentials=wiki)
        async with corral.open(root / "data", package_paths=[demo]) as opened:
            await opened.services.require(CredentialStore).set("wiki", SECRET, user_id="u_owner")
            yield opened


async def test_encoded_credentials_reach_no_result_frame_row_or_file(platform: Platform) -> None:
    turns: list[Any] = [{"tool_calls": [call("execute", action="skill", skill="wiki-notes")]}]
    turns += [
        {"tool_calls": [call("execute", command=command, cwd="${SKILL_DIR}", reason=name)]}
        for name, command in ATTACKS.items()
    ]
    turns.append({"text": "Done."})
    rt = platform.runtime
    conversation = await rt.start_conversation(model=script(platform, *turns))
    async with rt.events.subscribe(conversation.id) as events:
        turn = await platform.chat("leak it", conversation_id=conversation.id, profile="auto")
        frames = []
        while (event := events.get_nowait()) is not None:
            frames.append(event)
    assert turn.status == "finished", turn
    _, *printed = await results(platform, turn.conversation_id)
    assert len(printed) == len(ATTACKS)
    for name, result in zip(ATTACKS, printed, strict=True):
        assert "[redacted]" in text(result), (name, text(result))
        assert holds_a_form(text(result)) == [], (name, text(result))
    live = json.dumps([f for f in frames if f["type"] == "output"])
    assert "[redacted]" in live and holds_a_form(live) == []
    rows = json.dumps([r.data for r in await platform.rows(turn.conversation_id)], default=str)
    assert holds_a_form(rows) == []
    for form in FORMS:
        assert files_holding(platform.settings.data_dir, form) == [], form
