"""Forking a conversation before one of its calls: the new conversation's model sees exactly
the history up to it, the files come back as they were then in a new folder of the drive,
nothing is run again and the original conversation and files are left as they are."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from corral.errors import PolicyDenied, UsageError
from corral.platform import Platform
from corral.server import create_app
from corral.shell.checkpoints.scan import PLATFORM_AREA
from tests.runtime.conftest import call
from tests.runtime.recording import Recorder
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap
from tests.shell.test_checkpoints import describe
from tests.shell.test_interfaces import cli

pytestmark = needs_bwrap

FIRST = "sed -i s/one/two/ a.txt && rm b.txt && mkdir -p deep/er && echo d > deep/er/d.txt"
SECOND = "mkdir made && echo m > made/m.txt && chmod 600 sub/x.txt && ln -s a.txt l && rm -r deep"


async def two_turns(platform: Platform, drive: Path) -> tuple[Recorder, str, dict[str, object]]:
    """A conversation whose two turns each run one writing command in ``drive/proj``; the
    model answers "Fork reply." when told about a fork. Returns the tree between the turns."""
    await platform.admin.set_live("checkpoints", True)
    project = drive / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "x.txt").write_text("x\n")
    (project / "a.txt").write_text("one\n")
    (project / "b.txt").write_text("bee\n")
    (project / "ln").symlink_to("b.txt")
    give_to_sandbox(drive, platform.kernel.settings.sandbox_uid)
    cwd = str(project)
    model = Recorder(
        platform.runtime,
        "forking",
        {"tool_calls": [call("execute", command=FIRST, cwd=cwd)]},
        {"text": "First done."},
        [
            {"when_message_contains": "forked", "text": "Fork reply."},
            {"tool_calls": [call("execute", command=SECOND, cwd=cwd)]},
        ],
        {"text": "Second done."},
    )
    first = await platform.chat("change things", model=model.name, profile="auto")
    assert first.status == "finished", first
    between = describe(project)
    second = await platform.chat(
        "change more", conversation_id=first.conversation_id, profile="auto"
    )
    assert second.status == "finished" and second.text == "Second done.", second
    return model, first.conversation_id, dict(between)


async def call_ids(platform: Platform, conversation: str) -> list[str]:
    rows = await platform.rows(conversation)
    return [r.call_id for r in rows if r.kind == "tool_call" and r.call_id]


async def test_a_fork_sees_the_history_up_to_the_call_and_gets_the_files_of_then(
    platform: Platform, drive: Path
) -> None:
    model, original, between = await two_turns(platform, drive)
    after = describe(drive / "proj")
    rows_before = [r.to_json() for r in await platform.rows(original)]
    first_call, second_call = await call_ids(platform, original)
    seen_at_second = model.seen[2]  # the request in which the model made the second call

    outcome = await platform.fork(original, second_call, files_into="data://forked")

    assert outcome.at == second_call and outcome.forked_from == original
    [files] = outcome.files
    assert files.uri == "data://forked" and files.steps_undone == [2]
    assert describe(drive / "forked" / "proj") == between
    assert not (drive / "forked" / PLATFORM_AREA).exists()
    assert describe(drive / "proj") == after  # the original files are only read
    assert [r.to_json() for r in await platform.rows(original)] == rows_before
    forked = outcome.conversation.id
    assert await call_ids(platform, forked) == [first_call]  # nothing was run again
    turn = await platform.chat("go on in the forked one", conversation_id=forked, profile="auto")
    assert turn.status == "finished" and turn.text == "Fork reply.", turn
    asked = model.seen[-1]
    assert asked.texts() == [*seen_at_second.texts(), "go on in the forked one"]
    assert asked.call_ids("execute") == seen_at_second.call_ids("execute") == [first_call]
    assert describe(drive / "proj") == after

    # Before the first call, by its checkpoint step number: the files of the start.
    start = await platform.fork(original, "1", files_into="data://start")
    assert start.at == first_call and start.rows == 1 and start.files[0].steps_undone == [1, 2]
    assert sorted(describe(drive / "start" / "proj")) == [
        "a.txt",
        "b.txt",
        "ln",
        "sub",
        "sub/x.txt",
    ]
    assert (drive / "start" / "proj" / "a.txt").read_text() == "one\n"


async def test_forking_follows_the_uri_policy_of_the_person_asking(
    platform: Platform, drive: Path
) -> None:
    _, original, _ = await two_turns(platform, drive)
    _, second_call = await call_ids(platform, original)
    await platform.identity.create_role("reader", ["core.exec", "conversations.manage"])
    await platform.identity.create_user("rita", "reader")
    await platform.identity.create_role("outsider", ["core.exec", "conversations.manage"])
    await platform.identity.create_user("otto", "outsider")
    await platform.admin.grant_source(
        "data", principal_kind="role", principal="reader", rights="rx"
    )
    with pytest.raises(PolicyDenied, match="write access"):
        await platform.fork(original, second_call, user="rita", files_into="data://rita")
    with pytest.raises(PolicyDenied, match="read access"):
        await platform.fork(original, second_call, user="otto", files_into="data://otto")
    assert not (drive / "rita").exists() and not (drive / "otto").exists()
    history_only = await platform.fork(original, second_call, user="rita")
    assert history_only.files == [] and history_only.conversation.owner_id != "owner"
    rita = await platform.caller("rita")
    assert history_only.conversation.owner_id == rita.user_id


async def test_bad_fork_requests_are_clear_errors(platform: Platform, drive: Path) -> None:
    _, original, _ = await two_turns(platform, drive)
    _, second_call = await call_ids(platform, original)
    (drive / "taken").mkdir()
    for at, into, expected in [
        ("c_nope", None, "no step 'c_nope'"),
        ("9", None, "no step '9'"),
        (second_call, "data://taken", "exists already"),
        (second_call, "data://no/such/place", "is not a folder"),
        (second_call, "nowhere://x", "no registered source"),
    ]:
        with pytest.raises((UsageError, PolicyDenied), match=expected):
            await platform.fork(original, at, files_into=into)
    data_dir = platform.kernel.settings.data_dir
    code, out, err = await cli(data_dir, "fork", original, "--at", "9")
    assert code == 2 and "no step '9'" in err and "Traceback" not in err, out + err
    code, out, err = await cli(data_dir, "fork", "c_none", "--at", "1")
    assert code == 2 and "Traceback" not in err, out + err
    code, out, err = await cli(
        data_dir, "fork", original, "--at", second_call, "--files-into", "data://cli", "--json"
    )
    assert code == 0, err
    made = json.loads(out)
    assert made["files"][0]["folder"] == "data://cli" and made["rows"] > 0
    assert (drive / "cli" / "proj" / "deep" / "er" / "d.txt").read_text() == "d\n"

    token = await platform.identity.create_token("owner")
    transport = httpx.ASGITransport(app=create_app(platform))
    headers = {"Authorization": f"Bearer {token.token}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://corral.test", headers=headers
    ) as http:
        made = await http.post(f"/conversations/{original}/fork", json={"at": second_call})
        assert made.status_code == 201, made.text
        forked = made.json()["conversation"]["id"]
        shown = (await http.get(f"/conversations/{forked}")).json()
        assert shown["rows"][-1]["data"]["card"] == "forked"
        for body in ({"at": "nope"}, {"at": second_call, "files_into": "data://taken"}, {}):
            refused = await http.post(f"/conversations/{original}/fork", json=body)
            assert 400 <= refused.status_code < 500, (body, refused.text)
            assert "Traceback" not in refused.text
